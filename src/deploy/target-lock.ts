/**
 * One writer per target at a time: deploy, prune, delete and poke-images hold a coordination.k8s.io/v1 Lease named
 * by the target's discriminator while they change the cluster, so two of them (two CLIs, or a CLI beside the
 * controller or an agent) never interleave, and one never prunes what the other has just applied. The Lease lives in
 * kube-system (`gantry-target-<first 16 hex digits of sha256(discriminator)>`, the discriminator in an annotation),
 * the namespace every cluster has, where controllers keep their own Leases. It is held as a leader holds its Lease
 * (src/kube/lease.ts: 30 s lease renewed every 2 s), so a command killed with SIGKILL blocks others for 30 s at most,
 * and a command that cannot renew it for 20 s is aborted before anyone else may take over. Kluctl, Flux and Argo CD
 * have no such lock; Helm refuses an operation while another is pending, as a waitMs of 0 does here. A CLI deploy
 * takes it once its target is resolved, and reads the cluster under it while the target renders (deployTarget with a
 * PendingRender): a render error releases it with nothing applied.
 *
 * A target without a discriminator cannot be pruned or deleted and is not locked. A caller without the right to
 * write Leases in kube-system deploys unlocked, after a progress line saying so.
 */
import { createHash, randomUUID } from 'node:crypto';
import { KubeApiError } from '../kube/client.ts';
import type { Cluster } from '../kube/cluster.ts';
import { LeaderElector, type LeaseObservation } from '../kube/lease.ts';
import type { Progress } from '../progress.ts';

export const TARGET_LOCK_NAMESPACE = 'kube-system';
const TIMING = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 2000 };

/**
 * What this process last saw of each target Lease (by API server and name): a controller's reconciles each take the
 * lock anew, and a holder that died must look expired to the next one 30 s after its last renew, not 30 s after the
 * newest attempt first looked.
 */
const observations = new Map<string, LeaseObservation>();

/**
 * The identity of this process's last finished lock of each target Lease (by API server, name and holder): the next
 * lock of the same holder takes it up again, so a Lease that could not be released (the API server was down when
 * the command ended) is renewed at once instead of shutting its own holder out until it expires. Taken out while in
 * use, so two locks of one holder running at once never share an identity.
 */
const finishedIdentities = new Map<string, string>();

/** Who takes the lock and how long it waits for another holder. */
export interface TargetLock {
  /** Shown to whoever finds the target locked, e.g. `gantry deploy (alice@laptop, pid 4242)`. */
  holder: string;
  /** How long to wait for another holder to finish, in ms; 0 refuses at once. */
  waitMs: number;
}

/** The target is being changed by someone else, who did not finish within the wait. */
export class TargetLockedError extends Error {
  readonly holder: string;
  constructor(discriminator: string, holder: string, waitedMs: number) {
    const waited = waitedMs > 0 ? ` (waited ${Math.round(waitedMs / 1000)}s)` : '';
    super(
      `the target with discriminator '${discriminator}' is being changed by ${holder}${waited}; ` +
        `try again when it has finished (Lease ${TARGET_LOCK_NAMESPACE}/${targetLockName(discriminator)})`,
    );
    this.name = 'TargetLockedError';
    this.holder = holder;
  }
}

/** The Lease's name for a discriminator. */
export function targetLockName(discriminator: string): string {
  return `gantry-target-${createHash('sha256').update(discriminator).digest('hex').slice(0, 16)}`;
}

/** What holds the lock when the caller does not say: this process. */
export function defaultTargetLock(command: string): TargetLock {
  return { holder: `gantry ${command} (pid ${process.pid})`, waitMs: 0 };
}

/**
 * Runs `action` holding the target's lock.
 * @param action receives a signal that aborts when `signal` does or when the lock is lost.
 * @throws TargetLockedError when another holder keeps the lock beyond `lock.waitMs`; the signal's reason when it
 *   fired while waiting; whatever `action` throws.
 */
export async function withTargetLock<T>(
  cluster: Cluster,
  discriminator: string,
  lock: TargetLock,
  context: { progress: Progress; signal?: AbortSignal | undefined },
  action: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (!discriminator) return action(context.signal);
  const name = targetLockName(discriminator);
  const observationKey = `${cluster.client.server} ${name}`;
  const identityKey = `${observationKey} ${lock.holder}`;
  const identity = finishedIdentities.get(identityKey) ?? `${lock.holder} ${randomUUID().slice(0, 8)}`;
  finishedIdentities.delete(identityKey);
  let leading: (signal: AbortSignal) => void = () => {};
  let notAcquired: (reason: { holder: string } | { error: unknown }) => void = () => {};
  let cancelled: () => void = () => {};
  const elector = new LeaderElector({
    ...TIMING,
    // The caller's signal may be what ends the command (Ctrl-C): the Lease is still released then, by stop() below.
    client: cluster.client.withoutSignal(),
    namespace: TARGET_LOCK_NAMESPACE,
    name,
    identity,
    onStartedLeading: (signal) => leading(signal),
    onStoppedLeading: () => {},
    onNotAcquired: (reason) => notAcquired(reason),
    observed: observations.get(observationKey),
  });
  const acquired = new Promise<AbortSignal | undefined>((resolve, reject) => {
    const started = Date.now();
    let told = false;
    leading = resolve;
    notAcquired = (reason) => {
      if ('error' in reason) {
        if (!(reason.error instanceof KubeApiError) || reason.error.status !== 403) return;
        context.progress.step('lock', `cannot take Lease ${TARGET_LOCK_NAMESPACE}/${name} (forbidden); going on without the target lock`);
        resolve(undefined);
      } else if (Date.now() - started >= lock.waitMs) {
        reject(new TargetLockedError(discriminator, withoutSuffix(reason.holder), Date.now() - started));
      } else if (!told) {
        told = true;
        context.progress.step(
          'lock',
          `the target is being changed by ${withoutSuffix(reason.holder)}; waiting up to ${Math.round(lock.waitMs / 1000)}s`,
        );
      }
    };
    cancelled = () => reject(context.signal?.reason);
    // The caller's signal may live long (a controller's leadership): the listener goes with this lock, in finally.
    context.signal?.addEventListener('abort', cancelled, { once: true });
  });
  elector.start();
  let done = false;
  const running = new AbortController();
  try {
    const term = await acquired;
    term?.addEventListener('abort', () => {
      const reason = `lost the target lock (Lease ${TARGET_LOCK_NAMESPACE}/${name}): the API server did not renew it for 20s`;
      if (!done) running.abort(new Error(reason));
    });
    const signals = [context.signal, running.signal].filter((signal): signal is AbortSignal => signal !== undefined);
    return await action(AbortSignal.any(signals));
  } finally {
    done = true;
    context.signal?.removeEventListener('abort', cancelled);
    await elector.stop();
    const seen = elector.observation;
    if (seen) observations.set(observationKey, seen);
    finishedIdentities.set(identityKey, identity);
  }
}

/** The holder as the caller named it, without the suffix that makes each lock's identity unique. */
function withoutSuffix(identity: string): string {
  return identity.replace(/ [0-9a-f]{8}$/, '');
}

/**
 * Runs a command that changes the cluster (`run`, given `options` with the lock's signal, and the cluster to use)
 * under the target's lock, `options.lock` or this process's (waiting for nobody). A dry run takes no lock and is
 * given the cluster's dry-run view (Cluster.dryRun), through which no write can reach the cluster.
 */
export function lockedUnlessDryRun<O extends LockedCommandOptions, R>(
  command: string,
  discriminator: string,
  cluster: Cluster,
  options: O,
  run: (options: O, cluster: Cluster) => Promise<R>,
): Promise<R> {
  if (options.dryRun) return run(options, cluster.dryRun());
  const lock = options.lock ?? defaultTargetLock(command);
  return withTargetLock(cluster, discriminator, lock, options, (signal) => run({ ...options, signal }, cluster));
}

/** What lockedUnlessDryRun reads of a command's options. */
export interface LockedCommandOptions {
  dryRun: boolean;
  lock?: TargetLock | undefined;
  progress: Progress;
  signal?: AbortSignal | undefined;
}
