/**
 * Running the helm binary for Gantry: always with its own config, cache and data folders, so no repository,
 * registry login or plugin of the user's helm setup changes what a render produces.
 */
import path from 'node:path';
import type { Dispatcher } from 'undici';
import { CommandError, type RunResult } from '../exec.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { Tools } from '../tools.ts';
import { messageOf } from '../problems.ts';

/** What pulling and rendering charts needs from the engine. */
export interface ChartTools {
  /** Runs helm and git with the engine's environment. */
  tools: Tools;
  /** Git charts come through it. */
  git: GitCache;
  /** Folder of the charts pulled on demand (`skipPrePull`). */
  chartsCacheDir: string;
  /**
   * When set, Helm repositories and OCI registries are reached through it, and their charts are downloaded by Gantry
   * (chart-download.ts) rather than by `helm pull`: the fleet server's check of every connection.
   */
  egress?: Dispatcher;
}

/**
 * Runs `helm <args>` with `home` as HELM_CONFIG_HOME/HELM_CACHE_HOME/HELM_DATA_HOME (subfolders of it).
 * @throws Error carrying helm's own error line (`Error: …`) rather than the whole command line; the signal's reason
 *   when `signal` fired.
 */
export async function runHelm(
  tools: Tools,
  args: readonly string[],
  home: string,
  signal?: AbortSignal,
  input?: string,
): Promise<RunResult> {
  try {
    return await tools.run('helm', args, {
      input,
      env: {
        HELM_CONFIG_HOME: path.join(home, 'config'),
        HELM_CACHE_HOME: path.join(home, 'cache'),
        HELM_DATA_HOME: path.join(home, 'data'),
      },
      timeoutMs: 10 * 60_000,
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new Error(helmFailure(error));
  }
}

/** helm's `Error: …` lines without the prefix, or the whole message when helm printed none. */
function helmFailure(error: unknown): string {
  if (!(error instanceof CommandError)) return messageOf(error);
  const lines = error.stderr.split('\n').map((line) => line.trim());
  const errors = lines.filter((line) => line.startsWith('Error:')).map((line) => line.replace(/^Error:\s*/, ''));
  return errors.length > 0 ? errors.join('; ') : error.message;
}
