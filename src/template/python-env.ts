/**
 * Gantry's own Python env for Jinja2 templating: a virtualenv with exactly the packages of requirements.txt, kept in
 * the cache as `python-<first 12 hex digits of sha256(requirements.txt)>/`, so new pins give a new env and every
 * checkout or install of one Gantry version shares one. A role that named no Python (GANTRY_PYTHON) gets it on first
 * use when python3 on PATH lacks the pinned packages; the repository's setup makes the same env ahead of time.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { populateAtomically } from '../cache-entry.ts';
import { CommandError, run } from '../exec.ts';
import { isFile } from '../files.ts';
import type { Tools } from '../tools.ts';
import { checkPython, MINIMUM_PYTHON, pythonProblem, REQUIREMENTS_FILE } from './python-check.ts';

/** The env's folder under `cacheDir`; it is named by the requirements' content (read once per process). */
export function pythonEnvDir(cacheDir: string): string {
  requirementsHash ??= createHash('sha256').update(readFileSync(REQUIREMENTS_FILE)).digest('hex').slice(0, 12);
  return path.join(cacheDir, `python-${requirementsHash}`);
}
let requirementsHash: string | undefined;

/** The env's interpreter. */
export function pythonEnvPython(cacheDir: string): string {
  return path.join(pythonEnvDir(cacheDir), 'bin', 'python3');
}

/**
 * The Python the Jinja2 workers run, as far as it can be told without making anything: `tools`' own when `envCache`
 * is undefined (the role named its Python), else Gantry's env under `envCache` if it exists, else python3 from PATH
 * when it has the pinned packages, else Gantry's env still to be made (`pending`).
 */
export async function choosePython(tools: Tools, envCache: string | undefined): Promise<{ tools: Tools; pending: boolean }> {
  if (envCache === undefined) return { tools, pending: false };
  const own = tools.with('python', pythonEnvPython(envCache));
  if (await isFile(own.paths.python)) return { tools: own, pending: false };
  if ((await pythonProblem(tools)) === undefined) return { tools, pending: false };
  return { tools: own, pending: true };
}

/**
 * The tools the Jinja2 workers run with, as choosePython picks them, making Gantry's env first when it is pending
 * (from python3 on PATH, with pip from PyPI or the index pip is configured with). A Python Gantry did not make is
 * checked (checkPython); Gantry's env holds the pins by construction (pip installed requirements.txt, the folder is
 * named by its hash and moved into place only when complete), so checking it would only cost every run a Python
 * start before the first worker's.
 * @param report receives a line when the env is being made (it takes a few seconds) and when it is done.
 * @throws Error naming what to install when python3, its venv module or a package is missing, or pip fails.
 */
export async function resolvePython(tools: Tools, envCache: string | undefined, report: (line: string) => void): Promise<Tools> {
  const chosen = await choosePython(tools, envCache);
  if (chosen.pending && envCache !== undefined) await createPythonEnv(tools, envCache, report);
  const own = envCache !== undefined && chosen.tools.paths.python === pythonEnvPython(envCache);
  if (!own) await checkPython(chosen.tools);
  return chosen.tools;
}

/**
 * Makes the env under `cacheDir` from `tools`' python (python3) unless it exists, and returns its interpreter.
 * Built under a temporary name and renamed into place: python finds its env from its own path (pyvenv.cfg beside
 * bin/), and only pip's launcher scripts would keep the temporary path, hence `python3 -m pip`.
 * @throws as resolvePython.
 */
export async function createPythonEnv(tools: Tools, cacheDir: string, report: (line: string) => void): Promise<string> {
  const dir = pythonEnvDir(cacheDir);
  const python = path.join(dir, 'bin', 'python3');
  if (await isFile(python)) return python;
  await requireVenv(tools, dir);
  const started = performance.now();
  report(`creating Gantry's Python env for Jinja2 templating in ${dir} (first use; pip install -r ${REQUIREMENTS_FILE}) ...`);
  await populateAtomically(dir, async (temp) => {
    await tools.run('python', ['-m', 'venv', temp]);
    const pip = ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '-r', REQUIREMENTS_FILE];
    await run(path.join(temp, 'bin', 'python3'), pip, { env: tools.env, extendEnv: false });
  });
  report(`created Gantry's Python env in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return python;
}

/** @throws Error saying what to install when `tools`' python is missing, too old, or lacks venv and ensurepip. */
async function requireVenv(tools: Tools, dir: string): Promise<void> {
  const [major, minor] = MINIMUM_PYTHON;
  const probe = `import sys, venv, ensurepip; assert sys.version_info >= (${major}, ${minor}), sys.version.split()[0]`;
  try {
    await tools.run('python', ['-c', probe], { timeoutMs: 60_000 });
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    const reason = error.missingProgram ? 'was not found on PATH' : `cannot make a virtualenv (${lastLine(error.stderr)})`;
    throw new Error(
      `${tools.paths.python} ${reason}: Gantry's Jinja2 templating needs Python ${major}.${minor}+ with its venv module ` +
        `to make its env in ${dir} (Debian/Ubuntu: apt-get install python3 python3-venv; Fedora: dnf install python3; ` +
        `macOS: brew install python), or GANTRY_PYTHON naming a Python that has the packages of ${REQUIREMENTS_FILE}`,
    );
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').pop() ?? '';
}
