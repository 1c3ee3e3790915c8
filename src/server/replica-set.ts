/**
 * Spreads the server's background work over its live replicas with no agreement protocol: each replica beats in
 * the database (store/replicas.ts) and reads who else beat lately; the owner of a key (a git repository's id) is the
 * live replica with the highest hash of (replica, key), rendezvous (highest-random-weight) hashing, so a replica
 * joining or leaving moves only the keys it wins or held. For one beat two replicas may disagree on the live set and
 * both fetch a repository, which is harmless: fetching is idempotent and a revision is added only inside a
 * transaction that sees the new digest (store/services.ts updateService).
 * Heartbeats compare the replicas' clocks, which are assumed synchronised (NTP) to well within the live window.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import { sleep } from '../sleep.ts';
import { liveReplicas, recordHeartbeat, removeReplica, removeSilentReplicas, type Replica } from '../store/replicas.ts';
import type { Database } from '../store/schema.ts';
import { messageOf } from '../problems.ts';

/** A replica silent for this many heartbeat intervals is taken for gone. */
const LIVE_INTERVALS = 3;
/** A replica silent this many intervals is removed from the table (crashed replicas never remove themselves). */
const FORGET_INTERVALS = 60;

/** The replica among `replicaIds` that owns `key`, by highest sha256(replica, key); undefined for none. */
export function rendezvousOwner(key: string, replicaIds: readonly string[]): string | undefined {
  let owner: string | undefined;
  let best = '';
  for (const id of replicaIds) {
    const weight = createHash('sha256').update(id).update('\0').update(key).digest('hex');
    if (owner === undefined || weight > best) [owner, best] = [id, weight];
  }
  return owner;
}

export interface ReplicaSetOptions {
  db: Kysely<Database>;
  /** Milliseconds between heartbeats; a replica is live while its last beat is under 3 intervals old. */
  heartbeatIntervalMs: number;
  log: Logger;
}

/**
 * This server process's membership: start() once at startup, then owns(key) answers synchronously from the live set
 * of the last heartbeat (before start: this replica alone, so it owns every key). A failed beat is logged and the
 * last live set stands. The owner calls stop() at shutdown, which ends the heartbeats and removes the replica's row.
 */
export class ReplicaSet {
  /** This replica, random per start. */
  readonly id = randomUUID();
  readonly #options: ReplicaSetOptions;
  readonly #stopped = new AbortController();
  #live: readonly string[] = [this.id];
  #loop: Promise<void> | undefined;
  #url = '';

  constructor(options: ReplicaSetOptions) {
    this.#options = options;
  }

  /**
   * Beats once (so the others count this replica before it polls) and keeps beating.
   * @param url where this replica listens, recorded for operators.
   * @throws when the first beat fails.
   */
  async start(url: string): Promise<void> {
    this.#url = url;
    await this.#beat();
    this.#loop = this.#run();
  }

  /** Whether this replica owns `key` among the replicas live at the last heartbeat. */
  owns(key: string): boolean {
    return rendezvousOwner(key, this.#live) === this.id;
  }

  /** The live replicas as the database has them now. */
  async live(): Promise<Replica[]> {
    return await liveReplicas(this.#options.db, this.#cutoff(LIVE_INTERVALS));
  }

  /** Stops beating and removes this replica, so the others take its keys at their next beat. */
  async stop(): Promise<void> {
    this.#stopped.abort(new Error('server stopping'));
    await this.#loop;
    await removeReplica(this.#options.db, this.id).catch(() => undefined);
  }

  async #run(): Promise<void> {
    const signal = this.#stopped.signal;
    while (!signal.aborted) {
      await sleep(this.#options.heartbeatIntervalMs, signal).catch(() => undefined);
      if (signal.aborted) return;
      // The database being away is logged; the last known live set stands until it answers again.
      await this.#beat().catch((error: unknown) => this.#options.log.warn({ error: messageOf(error) }, 'replica heartbeat failed'));
    }
  }

  async #beat(): Promise<void> {
    const { db } = this.#options;
    await recordHeartbeat(db, { id: this.id, url: this.#url });
    await removeSilentReplicas(db, this.#cutoff(FORGET_INTERVALS));
    const others = (await this.live()).map((replica) => replica.id).filter((id) => id !== this.id);
    this.#live = [this.id, ...others];
  }

  #cutoff(intervals: number): Date {
    return new Date(Date.now() - intervals * this.#options.heartbeatIntervalMs);
  }
}
