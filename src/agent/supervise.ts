/**
 * The agent's loops run supervised, as Plural's deployment-operator runs its controllers: each does one piece of
 * work, waits, and does it again until the agent stops; a failed round is logged (`loop iteration failed`, with the
 * loop's name) and the loop goes on, so one failing loop never stops another.
 */
import type { Logger } from '../logger.ts';
import { messageOf } from '../problems.ts';

/** One supervised loop, as each file of loops/ builds it over the agent's state. */
export interface Loop {
  /** The `loop` field of its logs. */
  name: string;
  /** One round; a throw is logged and the loop goes on. */
  work(): Promise<void>;
  /** Resolves after `ms` milliseconds, sooner when woken or stopped; never rejects. */
  wait(ms: number): Promise<void>;
  /** Milliseconds to wait after each round, asked again each time. */
  interval(): number;
}

/** Runs `loop.work` now and then again after each `loop.wait(loop.interval())` until `signal` fires. */
export async function supervise(loop: Loop, log: Logger, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      await loop.work();
    } catch (error) {
      if (!signal.aborted) log.warn({ loop: loop.name, error: messageOf(error) }, 'loop iteration failed');
    }
    await loop.wait(loop.interval());
  }
}
