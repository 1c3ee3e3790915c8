/**
 * Debian packages the tests, the demo and the image build need (PostgreSQL, Chromium, mmdebstrap), installed with
 * apt-get on a fresh Debian machine when missing.
 */
import { run } from '../../src/exec.ts';
import { pathExists } from './cache.ts';

/**
 * Installs `program` from the Debian package `pkg` unless it exists.
 * @param purpose what needs it, for the progress line and the error (e.g. `the browser tests drive it`).
 * @throws as installDebianPackage; Error when apt-get succeeded but `program` did not appear.
 */
export async function ensureDebianProgram(program: string, pkg: string, purpose: string, report: (line: string) => void): Promise<void> {
  if (await pathExists(program)) return;
  await installDebianPackage(pkg, `${program} not found`, purpose, report);
  if (!(await pathExists(program))) throw new Error(`setup: apt-get installed ${pkg}, but ${program} did not appear`);
}

/**
 * `apt-get install pkg`, non-interactive, after `apt-get update`.
 * @param missing what is missing, for the error when this process cannot install it.
 * @throws Error saying what to install when this process is not root or has no apt-get; CommandError when apt-get fails.
 */
export async function installDebianPackage(pkg: string, missing: string, purpose: string, report: (line: string) => void): Promise<void> {
  if (process.getuid?.() !== 0 || !(await pathExists('/usr/bin/apt-get'))) {
    throw new Error(`setup: ${missing}; install Debian package ${pkg} (${purpose})`);
  }
  report(`installing ${pkg} (apt-get install ${pkg}): ${purpose}`);
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env });
  await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], { env });
}
