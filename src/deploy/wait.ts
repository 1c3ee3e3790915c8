/**
 * Waiting for applied objects to become ready (src/health decides per kind), with a deadline. When the deadline
 * passes, each object still waiting is reported with the reason the cluster gives; for workloads the reason is
 * looked for one level down, in their first Pod that is not ready and the PersistentVolumeClaims that Pod waits
 * for, because "0/3 ready" alone does not tell an operator what to fix.
 */
import pLimit from 'p-limit';
import { readinessOf, type Readiness } from '../health/index.ts';
import { ClusterUnreachableError } from '../kube/client.ts';
import type { Cluster } from '../kube/cluster.ts';
import { sleep } from '../sleep.ts';
import { formatRef, refKey, refOf, type KubeObject, type ObjectRef } from '../kube/object.ts';
import { splitKey, Watcher } from '../kube/watcher.ts';

export interface NotReady {
  ref: ObjectRef;
  /** Why it is not ready: the object's own reason, then the causes found below it. */
  reason: string;
  /** True when the object reports a terminal failure (not worth waiting for). */
  failed: boolean;
}

export interface WaitOptions {
  /** Deadline for all objects together, in milliseconds. */
  timeoutMs: number;
  /** How often the objects are read again besides watching them, in milliseconds (default 5000). */
  pollMs?: number;
  /** Called after every read or change with how many objects are still not ready. */
  onPoll?: (remaining: number) => void;
  /** Ends the wait at once, throwing the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Objects as just seen (by refKey): an apply's answer, a watched cache. One of them that is Ready there is not read
   * again; any other is read, since it may have become ready since.
   */
  known?: ReadonlyMap<string, KubeObject>;
}

/** The groups whose KluctlDeployments a GitOps controller (Gantry's or Kluctl's) reconciles. */
const KLUCTL_DEPLOYMENT_GROUPS = new Set(['gitops.gantry.dev', 'gitops.kluctl.io']);

/**
 * Two kinds are not waited for; every other kind is:
 * - a LoadBalancer Service waits for infrastructure Gantry does not control (a cluster without a load-balancer
 *   provider never assigns an address), so Services are not waited for;
 * - a KluctlDeployment is Ready only after its own reconcile, which may need the very controller worker that is
 *   deploying it: kluctl-examples/gitops-deployment deploys the KluctlDeployment that deploys it, which would wait
 *   for itself until the timeout.
 */
export function isWaitedFor(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  if (object.kind === 'Service' && object.apiVersion === 'v1') return false;
  return !(object.kind === 'KluctlDeployment' && KLUCTL_DEPLOYMENT_GROUPS.has(object.apiVersion.split('/')[0] ?? ''));
}

type State = { object: KubeObject | undefined; readiness: Readiness };

/** Watches carry the changes; reading every object again this often only covers a watch that does not. */
const DEFAULT_READ_MS = 5000;

/**
 * Waits until every one of `refs` is ready, one fails, or the deadline passes. Each is read once (unless `known` has
 * it Ready); then the kinds
 * and namespaces of those still waiting are watched (src/kube/watcher.ts), and readiness is judged again on each
 * change, as `kubectl wait` watches rather than polls. The objects waited for are read again every `pollMs` all
 * the same, through the cluster's client and its throttle: a watch may be refused (RBAC that grants get but not
 * watch) or be relisting after an outage.
 * @returns the objects not ready at the end (empty when all became ready), each with an explanation.
 * @throws the signal's reason when it fires.
 */
export async function waitForReadiness(cluster: Cluster, refs: readonly ObjectRef[], options: WaitOptions): Promise<NotReady[]> {
  const deadline = Date.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? DEFAULT_READ_MS;
  const unique = [...new Map(refs.map((ref) => [refKey(ref), ref])).values()];
  const states = new Map<string, State>();
  const unread: ObjectRef[] = [];
  for (const ref of unique) {
    const object = options.known?.get(refKey(ref));
    const readiness = object && readinessOf(object);
    if (object && readiness?.status === 'Ready') states.set(refKey(ref), { object, readiness });
    else unread.push(ref);
  }
  await readStates(cluster, unread, states);
  let pending = stillWaiting(unique, states);
  options.onPoll?.(pending.length);
  if (!settled(pending, states) && Date.now() < deadline) {
    const changes = new Changes(cluster, pending, states);
    try {
      let nextRead = Date.now() + pollMs;
      while (!settled(pending, states) && Date.now() < deadline) {
        await changes.next(Math.min(nextRead, deadline), options.signal);
        if (Date.now() >= nextRead) {
          await readStates(cluster, pending, states);
          nextRead = Date.now() + pollMs;
        }
        pending = stillWaiting(pending, states);
        options.onPoll?.(pending.length);
      }
    } finally {
      await changes.stop();
    }
  }
  return Promise.all(
    pending.map(async (ref) => {
      const state = states.get(refKey(ref));
      const causes = state?.object ? await explainWorkload(cluster, state.object) : [];
      return {
        ref,
        reason: [state?.readiness.message || state?.readiness.status || 'unknown', ...causes].join('; '),
        failed: state?.readiness.status === 'Failed',
      };
    }),
  );
}

async function readStates(cluster: Cluster, refs: readonly ObjectRef[], states: Map<string, State>): Promise<void> {
  const limit = pLimit(16);
  await Promise.all(refs.map((ref) => limit(async () => states.set(refKey(ref), await readState(cluster, ref)))));
}

function stillWaiting(refs: readonly ObjectRef[], states: ReadonlyMap<string, State>): ObjectRef[] {
  return refs.filter((ref) => states.get(refKey(ref))?.readiness.status !== 'Ready');
}

/** Nothing left to wait for, or something failed for good. */
function settled(pending: readonly ObjectRef[], states: ReadonlyMap<string, State>): boolean {
  return pending.length === 0 || pending.some((ref) => states.get(refKey(ref))?.readiness.status === 'Failed');
}

/** Watches of the objects waited for, one per kind and namespace, writing each change into `states`. */
class Changes {
  private readonly watchers: Promise<Watcher[]>;
  private changed = false;
  private wake: () => void = () => undefined;

  constructor(cluster: Cluster, refs: readonly ObjectRef[], states: Map<string, State>) {
    const waited = new Set(refs.map(refKey));
    const groups = new Map<string, ObjectRef>();
    for (const ref of refs) groups.set(`${ref.group}/${ref.version}/${ref.kind}/${ref.namespace}`, ref);
    this.watchers = Promise.all(
      [...groups.values()].map(async (sample) => {
        const resource = await cluster.resourceFor(sample);
        const watcher = new Watcher({
          client: cluster.client,
          resource: { group: resource.group, version: resource.version, plural: resource.resource },
          namespace: resource.namespaced ? sample.namespace : undefined,
          onChange: (key, object) => {
            const ref = { ...sample, ...splitKey(key) };
            if (!waited.has(refKey(ref))) return;
            states.set(refKey(ref), object ? { object, readiness: readinessOf(object) } : { object, readiness: MISSING });
            this.changed = true;
            this.wake();
          },
        });
        watcher.start();
        return watcher;
      }),
    ).catch(() => []);
  }

  /** Resolves at the next change (at once when one came since the last call) or at `until` (epoch ms). */
  async next(until: number, signal: AbortSignal | undefined): Promise<void> {
    if (!this.changed) {
      const woken = new AbortController();
      this.wake = () => woken.abort();
      await sleep(Math.max(0, until - Date.now()), signal ? AbortSignal.any([signal, woken.signal]) : woken.signal).catch(
        (error: unknown) => {
          if (signal?.aborted) throw error;
        },
      );
      this.wake = () => undefined;
    }
    this.changed = false;
  }

  async stop(): Promise<void> {
    await Promise.all((await this.watchers).map((watcher) => watcher.stop()));
  }
}

const MISSING: Readiness = { status: 'InProgress', message: 'does not exist' };

/**
 * The object's readiness now. An API server that cannot be reached (restarting, say) is read again at the next poll
 * rather than failing the wait: `kubectl wait` rides out an outage within its timeout too.
 */
async function readState(cluster: Cluster, ref: ObjectRef): Promise<{ object: KubeObject | undefined; readiness: Readiness }> {
  try {
    const object = await cluster.get(ref);
    return { object, readiness: object ? readinessOf(object) : MISSING };
  } catch (error) {
    if (!(error instanceof ClusterUnreachableError)) throw error;
    return { object: undefined, readiness: { status: 'InProgress', message: error.message } };
  }
}

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

/** For a workload: the first not-ready Pod it selects and the claims that Pod waits for. */
async function explainWorkload(cluster: Cluster, workload: KubeObject): Promise<string[]> {
  const matchLabels = (workload['spec'] as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels;
  if (!WORKLOAD_KINDS.has(workload.kind) || !matchLabels || !workload.metadata.namespace) return [];
  const podResource = await cluster.resourceFor({ group: '', version: 'v1', kind: 'Pod' });
  const selector = Object.entries(matchLabels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
  const pods = await cluster.list(podResource, selector, workload.metadata.namespace);
  const pod = pods.find((candidate) => readinessOf(candidate).status !== 'Ready');
  if (!pod) return pods.length === 0 ? ['no pods exist yet'] : [];
  return [`pod ${pod.metadata.name}: ${readinessOf(pod).message}`, ...(await explainClaims(cluster, pod))];
}

async function explainClaims(cluster: Cluster, pod: KubeObject): Promise<string[]> {
  const volumes = ((pod['spec'] as { volumes?: Array<{ persistentVolumeClaim?: { claimName?: string } }> } | undefined)?.volumes ?? [])
    .map((volume) => volume.persistentVolumeClaim?.claimName)
    .filter((name): name is string => Boolean(name));
  const reasons: string[] = [];
  for (const name of volumes) {
    const claim = await cluster.get({
      group: '',
      version: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: pod.metadata.namespace ?? '',
      name,
    });
    const readiness = claim ? readinessOf(claim) : undefined;
    if (!claim) reasons.push(`PersistentVolumeClaim ${name} does not exist`);
    else if (readiness?.status !== 'Ready') reasons.push(`${formatRef(refOf(claim))}: ${readiness?.message}`);
  }
  return reasons;
}
