/**
 * The web UI and the browser its tests drive: web/dist, which `gantry server` serves, built with Vite when it is
 * missing or older than any file it is built from; and Debian's `chromium`,
 * installed with apt-get on a fresh Debian machine when /usr/bin/chromium is missing (playwright-core drives it;
 * Playwright's own browser downloads are not used).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../src/exec.ts';
import { ensureDebianProgram } from './debian-package.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WEB_DIR = join(REPO_ROOT, 'web');
const DIST = join(WEB_DIR, 'dist');
const VITE = join(REPO_ROOT, 'node_modules', 'vite', 'bin', 'vite.js');

/** Debian's Chromium, as the browser tests launch it. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Builds the UI when stale and installs Chromium when missing; only compares timestamps when both are in place.
 * @throws Error when the build fails, or Chromium is missing and this process cannot install it (not root, or no
 *   apt-get), saying what to install.
 */
export async function ensureWebUi(report: (line: string) => void): Promise<void> {
  await buildWebUiWhenStale(report);
  await ensureDebianProgram(CHROMIUM, 'chromium', 'the browser tests drive it', report);
}

/** Builds web/dist with Vite when it is missing or older than a file it is built from. @throws when the build fails. */
export async function buildWebUiWhenStale(report: (line: string) => void): Promise<void> {
  const built = await modifiedAt(join(DIST, 'index.html'));
  if (built !== undefined && (await newestSource()) <= built) return;
  report('building the web UI (vite build web)');
  // A process of its own: NODE_ENV decides which React Vite bundles, and a test runner calling this has set it to test.
  await run(process.execPath, [VITE, 'build', WEB_DIR, '--logLevel', 'warn'], { env: { NODE_ENV: 'production' } });
}

/**
 * The newest modification time among what the build reads: web/'s files (but the build's), the fleet client it
 * bundles from src/client, and the lockfile.
 */
async function newestSource(): Promise<number> {
  const files = [
    ...(await filesUnder(WEB_DIR)),
    ...(await filesUnder(join(REPO_ROOT, 'src', 'client'))),
    join(REPO_ROOT, 'package-lock.json'),
  ];
  const times = await Promise.all(files.filter((file) => !file.startsWith(`${DIST}/`)).map(modifiedAt));
  return Math.max(...times.map((time) => time ?? 0));
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

async function modifiedAt(file: string): Promise<number | undefined> {
  return (await stat(file).catch(() => undefined))?.mtimeMs;
}
