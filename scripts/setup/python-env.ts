/**
 * The Python virtualenv that runs Gantry's Jinja2 templating, kept in the tool cache and keyed by the content
 * of the requirements file, so changing a pinned version gives a new env and a fresh clone reuses an old one.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '../../src/exec.ts';
import { cacheRoot, pathExists, populateAtomically } from './cache.ts';

/**
 * Returns the venv's python3 path, creating the env first when it is not cached.
 * @param requirementsFile a pip requirements file (pinned versions).
 * @param report receives progress lines.
 * @throws Error saying what to install when python3 or its venv module is missing; CommandError when pip fails.
 */
export async function ensurePythonEnv(requirementsFile: string, report: (line: string) => void): Promise<string> {
  const requirements = await readFile(requirementsFile, 'utf8');
  const hash = createHash('sha256').update(requirements).digest('hex').slice(0, 12);
  const envDir = join(cacheRoot(), `python-${hash}`);
  const python = join(envDir, 'bin', 'python3');
  if (await pathExists(python)) return python;

  await requirePython();
  const started = performance.now();
  report(`creating Python env ${envDir} from ${requirementsFile} ...`);
  // Built under a temporary name and renamed: python finds its env from its own path (pyvenv.cfg next to bin/),
  // so the env works after the rename; only pip's generated launcher scripts keep the old path, hence `-m pip`.
  await populateAtomically(envDir, async (tempDir) => {
    await run('python3', ['-m', 'venv', tempDir]);
    await run(join(tempDir, 'bin', 'python3'), ['-m', 'pip', 'install', '--no-input', '-r', requirementsFile]);
  });
  report(`created Python env in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return python;
}

async function requirePython(): Promise<void> {
  try {
    await run('python3', ['-c', 'import sys, venv, ensurepip; assert sys.version_info >= (3, 11)']);
  } catch (error) {
    throw new Error(
      'setup: python3 (3.11 or newer) with its venv and ensurepip modules is needed for Jinja2 templating; install ' +
        `it (Debian/Ubuntu: apt-get install python3 python3-venv) (${(error as Error).message.split('\n')[0]})`,
    );
  }
}
