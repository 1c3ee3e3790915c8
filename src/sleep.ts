/**
 * Waiting that a signal cuts short. Node's timers/promises rejects an aborted wait with a generic AbortError; the
 * engine's callers expect the signal's own reason (why the work stopped: lost leadership, a shutdown).
 */
import { setTimeout as wait } from 'node:timers/promises';

/** Resolves after `ms` milliseconds. @throws the signal's reason when it fires first. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await wait(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}
