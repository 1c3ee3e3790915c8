/**
 * The programs the engine drives (helm, kustomize, sops, git, python, gpg for the controller's PGP keys) and the environment they run with: the one
 * place the engine starts other programs from (src/exec.ts is the seam below it). Paths and environment come from
 * the caller's EngineConfig, never from this process: a controller's or agent's own credentials never reach a
 * tenant's helm, git or templates.
 */
import type { ChildProcess } from 'node:child_process';
import { run, start, type RunOptions, type RunResult } from './exec.ts';

export type Tool = 'helm' | 'kustomize' | 'sops' | 'git' | 'python' | 'gpg' | 'gpgconf';

/** Exact paths, or names looked up on the child environment's PATH. */
export type ToolPaths = Readonly<Record<Tool, string>>;

export class Tools {
  readonly paths: ToolPaths;
  /** Every child's whole environment (plus what a call adds). */
  readonly env: Readonly<Record<string, string>>;

  constructor(paths: ToolPaths, env: Readonly<Record<string, string>>) {
    this.paths = paths;
    this.env = env;
  }

  /**
   * Runs `tool args...` to completion; `options.env` is added to the child environment.
   * @throws CommandError (src/exec.ts) on failure; the signal's reason when `options.signal` fired.
   */
  run(tool: Tool, args: readonly string[], options: Omit<RunOptions, 'extendEnv'> = {}): Promise<RunResult> {
    return run(this.paths[tool], args, { ...options, env: { ...this.env, ...options.env }, extendEnv: false });
  }

  /** Starts a long-lived `tool args...` with pipes, as src/exec.ts's start. */
  start(tool: Tool, args: readonly string[]): ChildProcess {
    return start(this.paths[tool], args, { env: this.env, extendEnv: false });
  }
}
