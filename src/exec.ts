/**
 * The single seam through which Gantry runs other programs (helm, kustomize, git, python, the local
 * cluster's binaries). Keeping every child process behind these two functions gives one place for
 * environment hygiene and for error messages that name the command and carry its stderr.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execa, ExecaError } from 'execa';

export interface RunOptions {
  cwd?: string;
  /** Added to the parent environment, or with `extendEnv: false` the program's whole environment. */
  env?: Record<string, string | undefined>;
  /** False: the program sees `env` only, nothing of this process's environment. Default true. */
  extendEnv?: boolean;
  /** Written to the program's stdin. */
  input?: string;
  /** Kills the program after this many milliseconds. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Runs the program as this user (this process must be root); e.g. PostgreSQL, which refuses to run as root. */
  user?: ProcessUser;
}

/** A numeric user and group to run a program as. */
export interface ProcessUser {
  uid: number;
  gid: number;
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** A program exited non-zero, timed out, or could not be started. */
export class CommandError extends Error {
  readonly command: string;
  readonly exitCode: number | undefined;
  readonly stderr: string;
  /** Why it failed, without the command and stderr (e.g. `exited with code 1`). */
  readonly reason: string;
  /** The program itself was not found (on PATH, or at the path given). */
  readonly missingProgram: boolean;

  constructor(command: string, exitCode: number | undefined, stderr: string, reason: string, missingProgram = false) {
    super(`${command}: ${reason}${stderr ? `\n${stderr.trimEnd()}` : ''}`);
    this.name = 'CommandError';
    this.command = command;
    this.exitCode = exitCode;
    this.stderr = stderr;
    this.reason = reason;
    this.missingProgram = missingProgram;
  }
}

/**
 * Runs `file args...` to completion and returns its output.
 * @throws CommandError on a non-zero exit, a timeout, or a missing program; the signal's reason when `signal`
 *   fired (the program is killed).
 */
export async function run(file: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  try {
    const result = await execa(file, args, {
      cwd: options.cwd,
      env: options.env,
      extendEnv: options.extendEnv ?? true,
      input: options.input,
      timeout: options.timeoutMs,
      cancelSignal: options.signal,
      uid: options.user?.uid,
      gid: options.user?.gid,
      stripFinalNewline: false,
      maxBuffer: 1024 * 1024 * 1024,
    });
    return { stdout: result.stdout, stderr: result.stderr };
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw toCommandError(file, args, error);
  }
}

export interface StartOptions {
  cwd?: string;
  /** As RunOptions.env. */
  env?: Record<string, string | undefined>;
  /** As RunOptions.extendEnv. */
  extendEnv?: boolean;
  /** File descriptor (e.g. of an opened log file) that receives both stdout and stderr. */
  logFd?: number;
  /** Outlives the parent: its own process group, not waited for. */
  detached?: boolean;
  /** As RunOptions.user. */
  user?: ProcessUser;
}

/**
 * Starts a long-lived program (a worker, or a cluster component) without waiting for it.
 * With `logFd` its output goes to that file; otherwise stdin/stdout/stderr are pipes the caller drives.
 * A detached program gets its own process group and does not keep this process alive.
 */
export function start(file: string, args: readonly string[], options: StartOptions = {}): ChildProcess {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.extendEnv === false ? { ...options.env } : { ...process.env, ...options.env },
    stdio: options.logFd === undefined ? 'pipe' : ['ignore', options.logFd, options.logFd],
    detached: options.detached ?? false,
    uid: options.user?.uid,
    gid: options.user?.gid,
  });
  if (options.detached) child.unref();
  return child;
}

function toCommandError(file: string, args: readonly string[], error: unknown): Error {
  if (!(error instanceof ExecaError)) return error instanceof Error ? error : new Error(String(error));
  const command = [file, ...args].join(' ');
  // Some programs (tsc) write their errors to stdout: without stderr, stdout is what explains the failure.
  const stderr = (typeof error.stderr === 'string' && error.stderr) || (typeof error.stdout === 'string' ? error.stdout : '');
  if (error.code === 'ENOENT') return new CommandError(command, undefined, '', `${file} was not found on PATH`, true);
  if (error.timedOut) return new CommandError(command, undefined, stderr, 'timed out');
  return new CommandError(command, error.exitCode, stderr, `exited with code ${error.exitCode ?? 'unknown'}`);
}
