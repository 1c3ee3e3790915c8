/**
 * The controller's work queue of object keys (`namespace/name`), in the spirit of client-go's workqueue: a key is
 * queued at most once, carries one due time (the earliest asked for wins, so "requeue at the earliest due time"),
 * and is never handled by two workers at once. Up to `workers` keys are handled concurrently, so a slow key only
 * occupies its own worker. A key added while it is being handled is handled again afterwards.
 *
 * Reconcilers choose their own requeue delays; a handler that throws gets the queue's exponential backoff (per key,
 * bounded, reset by the next success), like controller-runtime's rate-limited requeue on error. A handler that
 * reports a failure it handled itself gets the same backoff, but never later than the delay it asked for: a
 * transient error is retried within seconds, a lasting one settles at the handler's own retry interval.
 */

/** The longest delay setTimeout takes, 2^31 - 1 ms (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a handler answers for one key. */
export interface HandlerResult {
  /** Handle the key again after this many milliseconds (unless something asks for an earlier time). */
  requeueAfterMs?: number;
  /** The handler failed (and handled it): retry after the backoff, bounded by requeueAfterMs. */
  failed?: boolean;
}

export type KeyHandler = (key: string) => Promise<HandlerResult | undefined | void>;

export interface WorkQueueOptions {
  /** How many keys are handled at the same time (≥ 1). */
  workers: number;
  /** Backoff after the first consecutive failure of a key, in ms; doubled per further failure. Default 1 s. */
  errorBackoffBaseMs?: number;
  /** Upper bound of the backoff, in ms. Default 5 min. */
  errorBackoffMaxMs?: number;
  /** Told about every handler that threw, with the delay after which its key is retried. */
  onError?: (key: string, error: unknown, retryInMs: number) => void;
}

const DEFAULT_BACKOFF_BASE_MS = 1000;
const DEFAULT_BACKOFF_MAX_MS = 5 * 60_000;

/**
 * Hands keys to `handler`, at most `workers` at once and never one key twice at once. Keys may be added before
 * start() and after stop(): they wait for the next start(). Its owner calls stop() at shutdown, after aborting the
 * handlers. Times are epoch ms, delays ms.
 * @throws (constructor) Error when `workers` is not a positive integer.
 */
export class WorkQueue {
  private readonly handler: KeyHandler;
  private readonly workers: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly onError: WorkQueueOptions['onError'];
  /** Keys waiting (not being handled), with the epoch ms at which each is due. */
  private readonly due = new Map<string, number>();
  /** Keys being handled, with the due time of a re-add that arrived meanwhile (undefined: none). */
  private readonly active = new Map<string, number | undefined>();
  /** Consecutive failures per key, for the backoff. */
  private readonly failures = new Map<string, number>();
  private readonly settled = new Set<() => void>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerDue = Infinity;
  private pumpPending: ReturnType<typeof setTimeout> | undefined;
  private running = false;

  constructor(handler: KeyHandler, options: WorkQueueOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1)
      throw new Error(`workers must be a positive integer, not ${options.workers}`);
    this.handler = handler;
    this.workers = options.workers;
    this.backoffBaseMs = options.errorBackoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS;
    this.backoffMaxMs = options.errorBackoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
    this.onError = options.onError;
  }

  /** Queues `key` to be handled as soon as a worker is free. */
  add(key: string): void {
    this.addAfter(key, 0);
  }

  /**
   * Queues `key` to be handled in `delayMs` milliseconds; when it is already queued (or being handled and re-added)
   * the earlier of the two due times is kept.
   */
  addAfter(key: string, delayMs: number): void {
    this.schedule(key, Date.now() + Math.max(0, delayMs));
    this.pump();
  }

  /** Starts handing keys to workers (keys added before are kept and handled now). */
  start(): void {
    this.running = true;
    this.pump();
  }

  /**
   * Stops handing out keys and resolves once the handlers in progress have returned. Queued keys stay queued
   * for a later start(). Handlers are not interrupted: the caller aborts them (the manager's AbortSignal).
   */
  async stop(): Promise<void> {
    this.running = false;
    this.clearTimer();
    clearTimeout(this.pumpPending);
    this.pumpPending = undefined;
    while (this.active.size > 0) await new Promise<void>((resolve) => this.settled.add(resolve));
  }

  /** Keys that are due and waiting for a worker (Prometheus' workqueue_depth). */
  get depth(): number {
    const now = Date.now();
    let count = 0;
    for (const dueAt of this.due.values()) if (dueAt <= now) count++;
    return count;
  }

  /** Keys being handled right now. */
  get activeCount(): number {
    return this.active.size;
  }

  /** Every key the queue knows, waiting or being handled. */
  get size(): number {
    let count = this.due.size;
    for (const key of this.active.keys()) if (!this.due.has(key)) count++;
    return count;
  }

  /** Whether `key` is waiting or being handled: something will happen to it without a new add. */
  has(key: string): boolean {
    return this.due.has(key) || this.active.has(key);
  }

  /** When `key` is next due (epoch ms); undefined when it is not queued (a key being handled is not, until re-added). */
  dueAt(key: string): number | undefined {
    return this.active.has(key) ? this.active.get(key) : this.due.get(key);
  }

  private schedule(key: string, dueAt: number): void {
    if (this.active.has(key)) {
      const pending = this.active.get(key);
      this.active.set(key, pending === undefined ? dueAt : Math.min(pending, dueAt));
      return;
    }
    const current = this.due.get(key);
    this.due.set(key, current === undefined ? dueAt : Math.min(current, dueAt));
  }

  /** Hands due keys to free workers, earliest due first, and arms the timer for the next due key. */
  private pump(): void {
    if (!this.running) return;
    const now = Date.now();
    while (this.active.size < this.workers) {
      const key = this.earliestDue(now);
      if (key === undefined) break;
      this.due.delete(key);
      this.active.set(key, undefined);
      void this.handle(key);
    }
    this.armTimer();
  }

  private earliestDue(now: number): string | undefined {
    let found: string | undefined;
    let foundAt = Infinity;
    for (const [key, dueAt] of this.due) {
      if (dueAt <= now && dueAt < foundAt) {
        found = key;
        foundAt = dueAt;
      }
    }
    return found;
  }

  private async handle(key: string): Promise<void> {
    let next: number | undefined;
    try {
      const result = await this.handler(key);
      if (result?.failed)
        next = Date.now() + Math.min(Math.max(0, result.requeueAfterMs ?? this.backoffMaxMs), this.backoffFor(key, Infinity));
      else {
        this.failures.delete(key);
        if (result?.requeueAfterMs !== undefined) next = Date.now() + Math.max(0, result.requeueAfterMs);
      }
    } catch (error) {
      const retryInMs = this.backoffFor(key, this.backoffMaxMs);
      next = Date.now() + retryInMs;
      this.onError?.(key, error, retryInMs);
    }
    const readded = this.active.get(key);
    this.active.delete(key);
    if (next !== undefined) this.schedule(key, next);
    if (readded !== undefined) this.schedule(key, readded);
    for (const resolve of this.settled) resolve();
    this.settled.clear();
    this.pumpSoon();
  }

  /** Counts one more consecutive failure of `key` and answers its backoff: base·2^(failures−1), at most `maxMs`. */
  private backoffFor(key: string, maxMs: number): number {
    const count = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, count);
    return Math.min(maxMs, this.backoffBaseMs * 2 ** Math.min(count - 1, 30));
  }

  /**
   * Hands out keys after the event loop had a turn: a handler that resolves without I/O and asks to run again at
   * once would otherwise keep the loop in microtasks forever, starving watches, timers and the HTTP server.
   */
  private pumpSoon(): void {
    this.pumpPending ??= setTimeout(() => {
      this.pumpPending = undefined;
      this.pump();
    }, 0);
  }

  private armTimer(): void {
    if (this.active.size >= this.workers) return this.clearTimer();
    let next = Infinity;
    for (const dueAt of this.due.values()) if (dueAt < next) next = dueAt;
    if (next === this.timerDue) return;
    this.clearTimer();
    if (next === Infinity) return;
    this.timerDue = next;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerDue = Infinity;
        this.pump();
      },
      // Node fires a longer delay than a signed 32-bit number of ms at once, which would re-arm in a busy loop (an
      // interval of 600h); a capped timer finds nothing due and arms the rest.
      Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())),
    );
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Infinity;
  }
}
