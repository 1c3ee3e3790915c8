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
  /** Pause between polls, in milliseconds (default 1000). */
  pollMs?: number;
  /** Called after every poll with how many objects are still not ready. */
  onPoll?: (remaining: number) => void;
  /** Ends the wait at once, throwing the signal's reason. */
  signal?: AbortSignal | undefined;
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

/**
 * Polls `refs` until every one is ready, one fails, or the deadline passes. Each poll reads every pending object
 * once, through the cluster's client and so its throttle.
 * @returns the objects not ready at the end (empty when all became ready), each with an explanation.
 * @throws the signal's reason when it fires.
 */
export async function waitForReadiness(cluster: Cluster, refs: readonly ObjectRef[], options: WaitOptions): Promise<NotReady[]> {
  const deadline = Date.now() + options.timeoutMs;
  const limit = pLimit(16);
  let pending = [...new Map(refs.map((ref) => [refKey(ref), ref])).values()];
  let last = new Map<string, { object: KubeObject | undefined; readiness: Readiness }>();
  while (pending.length > 0) {
    const states = await Promise.all(pending.map((ref) => limit(() => readState(cluster, ref))));
    last = new Map(pending.map((ref, index) => [refKey(ref), states[index] as { object: KubeObject | undefined; readiness: Readiness }]));
    pending = pending.filter((ref) => last.get(refKey(ref))?.readiness.status !== 'Ready');
    options.onPoll?.(pending.length);
    const failedNow = pending.filter((ref) => last.get(refKey(ref))?.readiness.status === 'Failed');
    if (failedNow.length > 0 || pending.length === 0 || Date.now() >= deadline) break;
    await sleep(Math.min(options.pollMs ?? 1000, Math.max(0, deadline - Date.now())), options.signal);
  }
  return Promise.all(
    pending.map(async (ref) => {
      const state = last.get(refKey(ref));
      const causes = state?.object ? await explainWorkload(cluster, state.object) : [];
      return {
        ref,
        reason: [state?.readiness.message || state?.readiness.status || 'unknown', ...causes].join('; '),
        failed: state?.readiness.status === 'Failed',
      };
    }),
  );
}

/**
 * The object's readiness now. An API server that cannot be reached (restarting, say) is read again at the next poll
 * rather than failing the wait: `kubectl wait` rides out an outage within its timeout too.
 */
async function readState(cluster: Cluster, ref: ObjectRef): Promise<{ object: KubeObject | undefined; readiness: Readiness }> {
  try {
    const object = await cluster.get(ref);
    return { object, readiness: object ? readinessOf(object) : { status: 'InProgress', message: 'does not exist' } };
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
