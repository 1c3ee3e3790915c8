/**
 * What `gantry version` reports: Gantry's and Node's versions, and those of the programs the engine runs, found the
 * way a render finds them (EngineConfig tools: GANTRY_* variables, else PATH; Python as resolvePython picks it, without
 * making Gantry's env).
 */
import { CommandError } from './exec.ts';
import { REQUIREMENTS_FILE } from './template/python-check.ts';
import { choosePython } from './template/python-env.ts';
import type { Tool, Tools } from './tools.ts';
import { GANTRY_VERSION } from './version.ts';

/** A program's version, or why there is none (`missing` says how to get it). */
export type ProgramVersion = { path: string; version: string } | { path: string; missing: string };

export interface Versions {
  gantry: string;
  node: string;
  /** The Python the Jinja2 workers would run, with its Jinja2 version. */
  python: (ProgramVersion & { jinja2?: string }) | { path: string; pending: string };
  helm: ProgramVersion;
  kustomize: ProgramVersion;
  sops: ProgramVersion;
}

// Prints "<python version> <jinja2 version or ->".
const PYTHON_PROBE = `
import sys
from importlib import metadata
try:
    jinja2 = metadata.version("jinja2")
except metadata.PackageNotFoundError:
    jinja2 = "-"
print(sys.version.split()[0], jinja2)
`;

/**
 * Asks each program for its version, all at once (about 0.1 s).
 * @param envCache as EngineConfig.pythonEnvCache.
 */
export async function collectVersions(tools: Tools, envCache: string | undefined): Promise<Versions> {
  const [python, helm, kustomize, sops] = await Promise.all([
    pythonVersion(tools, envCache),
    programVersion(tools, 'helm', ['version', '--short']),
    programVersion(tools, 'kustomize', ['version']),
    programVersion(tools, 'sops', ['--version', '--disable-version-check']),
  ]);
  return { gantry: GANTRY_VERSION, node: process.version, python, helm, kustomize, sops };
}

/** The program's stdout, or why it could not run. */
async function ask(
  tools: Tools,
  tool: Tool,
  args: readonly string[],
): Promise<{ path: string; stdout: string } | { path: string; missing: string }> {
  const path = tools.paths[tool];
  try {
    return { path, stdout: (await tools.run(tool, args, { timeoutMs: 10_000 })).stdout };
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    return { path, missing: error.missingProgram ? error.reason : (error.message.split('\n')[0] ?? error.message) };
  }
}

async function programVersion(tools: Tools, tool: Tool, args: readonly string[]): Promise<ProgramVersion> {
  const answer = await ask(tools, tool, args);
  if ('missing' in answer) return answer;
  return { path: answer.path, version: /v?\d+\.\d+\.\d+/.exec(answer.stdout)?.[0] ?? answer.stdout.trim() };
}

/** The Python resolvePython would pick, or the env it would make. */
async function pythonVersion(tools: Tools, envCache: string | undefined): Promise<Versions['python']> {
  const chosen = await choosePython(tools, envCache);
  if (chosen.pending) return { path: chosen.tools.paths.python, pending: `made on first render from python3 and ${REQUIREMENTS_FILE}` };
  return probePython(chosen.tools);
}

async function probePython(tools: Tools): Promise<ProgramVersion & { jinja2?: string }> {
  const answer = await ask(tools, 'python', ['-c', PYTHON_PROBE]);
  if ('missing' in answer) return answer;
  const [version = '', jinja2 = '-'] = answer.stdout.trim().split(/\s+/);
  return jinja2 === '-' ? { path: answer.path, version } : { path: answer.path, version, jinja2 };
}
