/**
 * The programs the engine drives (helm, kustomize, sops, git, python, gpg for the controller's PGP keys) and the environment they run with: the one
 * place the engine starts other programs from (src/exec.ts is the seam below it). Paths and environment come from
 * the caller's EngineConfig, never from this process: a controller's or agent's own credentials never reach a
 * tenant's helm, git or templates.
 */
import type { ChildProcess } from 'node:child_process';
import { CommandError, run, start, type RunOptions, type RunResult } from './exec.ts';

export type Tool = 'helm' | 'kustomize' | 'sops' | 'git' | 'python' | 'gpg' | 'gpgconf';

/** Where each program comes from, for the error when it is missing, and the variable that names it exactly. */
const INSTALL_HINTS: Readonly<Record<Tool, string>> = {
  helm: 'install Helm 4 (https://helm.sh/docs/intro/install/) or set GANTRY_HELM to its path',
  kustomize: 'install kustomize (https://kubectl.docs.kubernetes.io/installation/kustomize/) or set GANTRY_KUSTOMIZE to its path',
  sops: 'install sops (https://github.com/getsops/sops/releases) or set GANTRY_SOPS to its path',
  git: 'install git (Debian/Ubuntu: apt-get install git) or set GANTRY_GIT to its path',
  python: 'install Python 3.11+ (Debian/Ubuntu: apt-get install python3 python3-venv) or set GANTRY_PYTHON to its path',
  gpg: 'install GnuPG (Debian/Ubuntu: apt-get install gnupg) or set GANTRY_GPG to its path',
  gpgconf: 'install GnuPG (Debian/Ubuntu: apt-get install gnupg) or set GANTRY_GPGCONF to its path',
};

/** Exact paths, or names looked up on the child environment's PATH. */
export type ToolPaths = Readonly<Record<Tool, string>>;

/**
 * An immutable set of tool paths and child environment: every child gets exactly `env` (plus a call's own), never
 * this process's environment. Cheap to copy (with()) and safe to share; holds no process itself: whoever start()s a
 * long-lived program ends it.
 */
export class Tools {
  readonly paths: ToolPaths;
  /** Every child's whole environment (plus what a call adds). */
  readonly env: Readonly<Record<string, string>>;

  constructor(paths: ToolPaths, env: Readonly<Record<string, string>>) {
    this.paths = paths;
    this.env = env;
  }

  /** The same tools with `tool` run from `path`. */
  with(tool: Tool, path: string): Tools {
    return new Tools({ ...this.paths, [tool]: path }, this.env);
  }

  /**
   * Runs `tool args...` to completion; `options.env` is added to the child environment.
   * @throws CommandError (src/exec.ts) on failure, saying how to install the program when it is missing; the signal's
   *   reason when `options.signal` fired.
   */
  async run(tool: Tool, args: readonly string[], options: Omit<RunOptions, 'extendEnv'> = {}): Promise<RunResult> {
    try {
      return await run(this.paths[tool], args, { ...options, env: { ...this.env, ...options.env }, extendEnv: false });
    } catch (error) {
      if (!(error instanceof CommandError) || !error.missingProgram) throw error;
      const reason = `${this.paths[tool]} was not found on PATH: ${INSTALL_HINTS[tool]}`;
      throw new CommandError(error.command, undefined, '', reason, true);
    }
  }

  /** Starts a long-lived `tool args...` with pipes, as src/exec.ts's start. */
  start(tool: Tool, args: readonly string[]): ChildProcess {
    return start(this.paths[tool], args, { env: this.env, extendEnv: false });
  }
}
