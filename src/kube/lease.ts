/**
 * Leader election with a coordination.k8s.io/v1 Lease, following client-go's tools/leaderelection:
 * - a candidate tries every retryPeriod (with jitter factor 1.2) to take the Lease: create it when missing, or
 *   update it when it has no holder or its holder let it expire;
 * - expiry is judged on the local clock: a Lease is expired when it has not changed (resourceVersion) for
 *   spec.leaseDurationSeconds since this candidate last saw it change, so clock skew between replicas does not
 *   matter (client-go's observedTime);
 * - the leader renews (spec.renewTime) every retryPeriod and stops leading when no renew succeeded for
 *   renewDeadline, which is shorter than the lease duration, so it stops before anyone else may take over;
 * - each take-over increments spec.leaseTransitions and sets spec.acquireTime;
 * - on stop the leader releases the Lease (holderIdentity "", leaseDurationSeconds 1) so a standby takes over
 *   within one retryPeriod instead of waiting for expiry.
 * Unlike client-go (whose callers exit the process after losing the lease), a lost leader becomes a candidate
 * again once its onStoppedLeading has finished.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeApiError, type KubeClient } from './client.ts';
import type { Logger } from '../logger.ts';

/** client-go's JitterFactor for the acquire loop. */
const JITTER_FACTOR = 1.2;

/** Which Lease, who competes for it, and its timings (client-go's names and controller-runtime's defaults). */
export interface LeaderElectionSettings {
  /** Namespace and name of the Lease (coordination.k8s.io/v1). */
  namespace: string;
  name: string;
  /** This candidate's identity; default `<hostname>_<uuid>` as controller-runtime builds it. */
  identity?: string;
  /** How long a Lease is valid after its last renew; whole seconds (the Lease stores seconds). Default 15 s. */
  leaseDurationMs?: number;
  /** How long the leader keeps leading without a successful renew. Default 10 s. */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews. Default 2 s. */
  retryPeriodMs?: number;
  /**
   * What an earlier candidate of this process saw of the Lease (its `observation` when it stopped), so that a series
   * of short-lived candidates judges expiry from when the Lease really last changed, not from when each first looked.
   */
  observed?: LeaseObservation;
}

/** A Lease's resourceVersion and when (ms since the epoch, local clock) it was first seen with it. */
export interface LeaseObservation {
  resourceVersion: string;
  at: number;
}

export interface LeaderElectionOptions extends LeaderElectionSettings {
  client: KubeClient;
  /** Called when this candidate becomes leader; `signal` aborts when it stops leading. */
  onStartedLeading: (signal: AbortSignal) => void;
  /** Called when this candidate stops leading (lost or stopped); the Lease is released after it resolves. */
  onStoppedLeading: () => void | Promise<void>;
  /** Told why an attempt to acquire or renew failed: another holder's valid Lease, or the error (e.g. 403 Forbidden). */
  onNotAcquired?: (reason: { holder: string } | { error: unknown }) => void;
  /** Where leadership changes and failed renews are logged; none for a caller that reports through onNotAcquired. */
  log?: Logger | undefined;
}

/** The fields of a Lease this module reads and writes. */
interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; [field: string]: unknown };
  spec?: LeaseSpec;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  [field: string]: unknown;
}

/** A MicroTime as the API server parses it: RFC 3339 with exactly six fractional digits. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * One candidate for one Lease. start() campaigns in the background (a second call does nothing); stop() ends the
 * campaign for good (an elector does not start again: make a new one, passing `observation` on as `observed`). The
 * callbacks run on the campaign's loop: while onStoppedLeading runs, neither campaigning nor release happens.
 * @throws (constructor) Error when the timings break client-go's rules: whole-second lease duration greater than the
 *   renew deadline, itself greater than 1.2 × the retry period.
 */
export class LeaderElector {
  readonly identity: string;
  private readonly options: LeaderElectionOptions;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private release = true;
  private leading = false;
  /** The Lease as last read or written, and when its resourceVersion last changed on the local clock. */
  private lease: Lease | undefined;
  private observedVersion: string | undefined;
  private observedAt: number;

  /** @throws Error when the durations do not satisfy client-go's rules. */
  constructor(options: LeaderElectionOptions) {
    this.options = options;
    this.identity = options.identity ?? `${hostname()}_${randomUUID()}`;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2000;
    this.observedVersion = options.observed?.resourceVersion;
    this.observedAt = options.observed?.at ?? 0;
    if (this.leaseDurationMs % 1000 !== 0 || this.leaseDurationMs < 1000)
      throw new Error(`leaseDurationMs must be whole seconds, not ${this.leaseDurationMs}`);
    if (this.leaseDurationMs <= this.renewDeadlineMs) throw new Error('leaseDurationMs must be greater than renewDeadlineMs');
    if (this.renewDeadlineMs <= JITTER_FACTOR * this.retryPeriodMs)
      throw new Error(`renewDeadlineMs must be greater than retryPeriodMs × ${JITTER_FACTOR}`);
    if (options.identity === '') throw new Error('identity must not be empty');
  }

  /** The Lease's resourceVersion as last seen, and since when; undefined before the first look. */
  get observation(): LeaseObservation | undefined {
    return this.observedVersion === undefined ? undefined : { resourceVersion: this.observedVersion, at: this.observedAt };
  }

  /** True while this candidate leads. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts campaigning in the background. */
  start(): void {
    this.running ??= this.run();
  }

  /**
   * Stops campaigning; a leader stops leading (onStoppedLeading is awaited) and then, unless `release` is false,
   * releases the Lease. `release: false` leaves the Lease to expire, as a crashed process would.
   */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.release = options.release ?? true;
    this.stopping.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    const log = this.options.log;
    while (!this.stopped) {
      while (!this.stopped && !(await this.tryAcquireOrRenew(this.renewDeadlineMs))) {
        await this.pause(this.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR));
      }
      if (this.stopped) break;
      this.leading = true;
      const term = new AbortController();
      log?.info({ lease: this.leaseName, identity: this.identity, transitions: this.lease?.spec?.leaseTransitions }, 'became leader');
      this.options.onStartedLeading(term.signal);
      await this.renewUntilLost();
      this.leading = false;
      term.abort();
      if (!this.stopped)
        log?.warn(
          { lease: this.leaseName, identity: this.identity, renewDeadlineMs: this.renewDeadlineMs },
          'lost leadership: no renew succeeded within the renew deadline',
        );
      await this.options.onStoppedLeading();
    }
    if (this.release && this.lease && this.holds(this.lease)) await this.releaseLease(this.lease);
  }

  /** Renews every retryPeriod; returns when stopped or when no renew succeeded for renewDeadline. */
  private async renewUntilLost(): Promise<void> {
    let renewedAt = Date.now();
    while (!this.stopped) {
      await this.pause(this.retryPeriodMs);
      if (this.stopped) return;
      const remaining = this.renewDeadlineMs - (Date.now() - renewedAt);
      if (remaining > 0 && (await this.tryAcquireOrRenew(remaining))) renewedAt = Date.now();
      else if (Date.now() - renewedAt >= this.renewDeadlineMs) return;
    }
  }

  /**
   * One attempt, as client-go's tryAcquireOrRenew: the leader first updates its own last Lease optimistically;
   * otherwise the Lease is read, created when missing, left alone while another holder's lease is valid, and taken
   * over or renewed with an update conditional on its resourceVersion. Errors mean "not acquired" and are logged.
   */
  private async tryAcquireOrRenew(timeoutMs: number): Promise<boolean> {
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(timeoutMs)]);
    const now = new Date();
    try {
      if (this.leading && this.lease && this.holds(this.lease) && this.valid(now.getTime())) {
        try {
          return this.observe(await this.update(this.lease, this.renewedSpec(this.lease.spec ?? {}, now), signal));
        } catch (error) {
          if (signal.aborted) throw error;
          this.options.log?.debug({ err: error, lease: this.leaseName }, 'optimistic renew failed; reading the lease');
        }
      }
      const current = await this.get(signal);
      if (!current) return this.observe(await this.create(now, signal));
      this.observe(current);
      const holder = current.spec?.holderIdentity;
      if (holder && holder !== this.identity && this.valid(now.getTime())) {
        this.options.onNotAcquired?.({ holder });
        return false;
      }
      const spec = holder === this.identity ? this.renewedSpec(current.spec ?? {}, now) : this.takenOverSpec(current.spec ?? {}, now);
      return this.observe(await this.update(current, spec, signal));
    } catch (error) {
      if (this.stopped) return false;
      this.options.log?.debug({ err: error, lease: this.leaseName }, 'could not acquire or renew the lease');
      this.options.onNotAcquired?.({ error });
      return false;
    }
  }

  /**
   * Gives the Lease up, so a standby takes over at once. As client-go, without reading it first: the update is
   * conditional on the resourceVersion this candidate last wrote, so it fails (409) when anyone changed the Lease
   * since, and then the Lease is not this candidate's to give.
   */
  private async releaseLease(lease: Lease): Promise<void> {
    const signal = AbortSignal.timeout(this.renewDeadlineMs);
    try {
      const now = microTime(new Date());
      const spec: LeaseSpec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
      await this.update(lease, spec, signal);
      this.options.log?.info({ lease: this.leaseName, identity: this.identity }, 'released the lease');
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 409) return;
      this.options.log?.warn({ err: error, lease: this.leaseName }, 'could not release the lease; it expires by itself');
    }
  }

  private renewedSpec(spec: LeaseSpec, now: Date): LeaseSpec {
    return { ...spec, holderIdentity: this.identity, leaseDurationSeconds: this.leaseDurationMs / 1000, renewTime: microTime(now) };
  }

  private takenOverSpec(spec: LeaseSpec, now: Date): LeaseSpec {
    const time = microTime(now);
    return {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: this.leaseDurationMs / 1000,
      acquireTime: time,
      renewTime: time,
      leaseTransitions: (spec.leaseTransitions ?? 0) + 1,
    };
  }

  private holds(lease: Lease): boolean {
    return lease.spec?.holderIdentity === this.identity;
  }

  /** Whether the last observed Lease is still valid at `now`, measured from when it was seen to change. */
  private valid(now: number): boolean {
    return this.observedAt + (this.lease?.spec?.leaseDurationSeconds ?? 0) * 1000 > now;
  }

  /** Records a Lease read or written; its validity restarts when its resourceVersion changed. Returns true. */
  private observe(lease: Lease): true {
    if (lease.metadata.resourceVersion !== this.observedVersion) {
      this.observedVersion = lease.metadata.resourceVersion;
      this.observedAt = Date.now();
    }
    this.lease = lease;
    return true;
  }

  private async get(signal: AbortSignal): Promise<Lease | undefined> {
    try {
      return await this.options.client.request<Lease>('GET', this.path(this.options.name), { signal });
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  private create(now: Date, signal: AbortSignal): Promise<Lease> {
    const time = microTime(now);
    const lease: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.options.name, namespace: this.options.namespace },
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseDurationMs / 1000,
        acquireTime: time,
        renewTime: time,
        leaseTransitions: 0,
      },
    };
    return this.options.client.request<Lease>('POST', this.path(), { body: lease, signal });
  }

  /** Replaces the Lease's spec, conditional on the resourceVersion it was read with (409 when it changed). */
  private update(lease: Lease, spec: LeaseSpec, signal: AbortSignal): Promise<Lease> {
    return this.options.client.request<Lease>('PUT', this.path(lease.metadata.name), { body: { ...lease, spec }, signal });
  }

  private pause(delayMs: number): Promise<void> {
    return sleep(delayMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  private get leaseName(): string {
    return `${this.options.namespace}/${this.options.name}`;
  }

  private path(name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.options.namespace)}/leases`;
    return name ? `${base}/${encodeURIComponent(name)}` : base;
  }
}
