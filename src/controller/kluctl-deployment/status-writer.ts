/**
 * Writes one reconcile's status, one write at a time, with progress held back. Kluctl's controller patches the
 * Reconciling condition at every phase (fetching, rendering, deploy, validate, drift detection); a reconcile of a
 * small project goes through them all in a fraction of a second, so those writes were a fifth of its requests (which
 * a thousand deployments wait on, under the client's rate limit) and nobody could read them. Here a progress message
 * is written once the reconcile has run `delayMs` since its start or its last write, and only the newest: a fast
 * reconcile writes its status once, at the end; a slow one shows where it is within `delayMs`.
 */
export class StatusWriter {
  private readonly write: () => Promise<boolean>;
  private readonly delayMs: number;
  private lastWrite: number;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<boolean> = Promise.resolve(true);

  /**
   * @param write sends the whole current status; false when that failed (it must not throw).
   * @param startedAt when the reconcile started (epoch ms): the first progress waits `delayMs` from it.
   */
  constructor(write: () => Promise<boolean>, options: { delayMs: number; startedAt: number }) {
    this.write = write;
    this.delayMs = options.delayMs;
    this.lastWrite = options.startedAt;
  }

  /** The status shows new progress: it is written `delayMs` after the last write, unless a write comes first. */
  soon(): void {
    if (this.timer) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.now();
      },
      Math.max(0, this.lastWrite + this.delayMs - Date.now()),
    );
  }

  /** Writes the status now, after any write under way; resolves false when the write failed. */
  now(): Promise<boolean> {
    this.cancel();
    this.lastWrite = Date.now();
    this.chain = this.chain.then(() => this.write());
    return this.chain;
  }

  /** Drops a progress write not sent yet (the reconcile was cancelled). */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
