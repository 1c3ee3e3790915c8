/**
 * A wait that ends early when woken: the poll loop sleeps on it, and a kick from the push channel wakes it. A wake
 * while nobody waits is kept for the next wait, so a kick that arrives during a poll is not lost.
 */
import { setTimeout as delay } from 'node:timers/promises';

/**
 * For one waiter at a time (a second concurrent wait would take the first one's wake). Any number of wakes before a
 * wait count as one. wait() never rejects, not even when its signal fires. Holds no timer once a wait has ended.
 */
export class Wakeup {
  #pending = false;
  #wake: (() => void) | undefined;

  wake(): void {
    this.#pending = true;
    this.#wake?.();
  }

  /** Resolves after `ms` milliseconds, at a wake, or when `signal` fires, whichever comes first. */
  async wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return;
    }
    const stop = new AbortController();
    const woken = new Promise<void>((resolve) => (this.#wake = resolve));
    try {
      await Promise.race([delay(ms, undefined, { signal: AbortSignal.any([signal, stop.signal]) }).catch(() => undefined), woken]);
    } finally {
      stop.abort();
      this.#wake = undefined;
      this.#pending = false;
    }
  }
}
