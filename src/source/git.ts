/**
 * Running the git CLI for Gantry: never prompts (a missing credential fails at once instead of hanging a
 * reconcile), ignores the machine's system config and the user's, and keeps its own HOME so no user setting
 * (credential helpers, url rewrites, hooks) changes what Gantry fetches.
 */
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, type RunResult } from '../exec.ts';

const GIT_HOME = path.join(os.tmpdir(), 'gantry-git-home');

export interface GitOptions {
  cwd?: string;
  /** Extra environment, e.g. GIT_SSH_COMMAND or GIT_ASKPASS for credentials. */
  env?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Runs `git <args>`.
 * @throws CommandError (from src/exec.ts) with git's stderr when git fails.
 */
export async function git(args: readonly string[], options: GitOptions = {}): Promise<RunResult> {
  await mkdir(GIT_HOME, { recursive: true });
  return run('git', args, {
    cwd: options.cwd,
    timeoutMs: options.timeoutMs ?? 5 * 60_000,
    env: {
      HOME: GIT_HOME,
      XDG_CONFIG_HOME: GIT_HOME,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: 'true',
      SSH_ASKPASS: 'true',
      ...options.env,
    },
  });
}
