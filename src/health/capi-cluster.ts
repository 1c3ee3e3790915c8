import type { KubeObject } from '../kube/object.ts';
import { type Condition, conditionOf, describeCondition, stringAt, unobservedGeneration } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * The conditions Cluster API's Available condition summarizes, in the order provisioning meets them
 * (sigs.k8s.io/cluster-api api/core/v1beta2/cluster_types.go): where a Cluster stands when Available says nothing.
 */
const PROVISIONING_STEPS = [
  'InfrastructureReady',
  'ControlPlaneInitialized',
  'ControlPlaneAvailable',
  'WorkersAvailable',
  'RemoteConnectionProbe',
  'TopologyReconciled',
] as const;

/**
 * Readiness of a Cluster API `cluster.x-k8s.io` Cluster (v1beta2 status; the v1beta1 `status.phase` is the same):
 * - InProgress until status.observedGeneration catches up with metadata.generation;
 * - Failed in phase `Failed` (Cluster API's terminal failure), with the v1beta1 failure message where it kept one;
 * - InProgress while it is being deleted (phase `Deleting` or a deletionTimestamp);
 * - Ready when the `Available` condition is True: Cluster API sets it when the infrastructure is ready, the control
 *   plane and workers are available, the API server answers and the topology is reconciled;
 * - otherwise InProgress, naming the phase and what Cluster API's Available condition says is missing (one
 *   `* Condition: message` line per condition, the control plane's own reason among them, e.g.
 *   `Provisioning: RemoteConnectionProbe: Remote connection not established yet; ControlPlaneAvailable: ...`), or,
 *   without that message, the first of its conditions not True with its reason: why it stalls.
 */
export function capiClusterReadiness(cluster: KubeObject): Readiness {
  const unobserved = unobservedGeneration(cluster);
  if (unobserved) return unobserved;

  const phase = stringAt(cluster, 'status', 'phase') ?? 'Pending';
  if (phase === 'Failed') {
    const message = stringAt(cluster, 'status', 'deprecated', 'v1beta1', 'failureMessage') ?? stringAt(cluster, 'status', 'failureMessage');
    return failed(`phase Failed${message ? `: ${message}` : ''}`);
  }
  if (phase === 'Deleting' || cluster.metadata.deletionTimestamp !== undefined) return inProgress('Deleting');

  const available = conditionOf(cluster, 'Available');
  if (available?.status === 'True') {
    const version = stringAt(cluster, 'spec', 'topology', 'version');
    return ready(version ? `${phase}, Kubernetes ${version}` : phase);
  }
  const missing = (available?.message ?? '')
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s*/, '').trim())
    .filter((line) => line !== '');
  if (missing.length > 0) return inProgress(`${phase}: ${missing.join('; ')}`);
  for (const type of PROVISIONING_STEPS) {
    const step = conditionOf(cluster, type);
    if (step && step.status !== 'True') return inProgress(`${phase}: ${type} ${step.status}${describedAfter(step)}`);
  }
  return inProgress(available ? `${phase}: Available ${available.status}${describedAfter(available)}` : phase);
}

function describedAfter(condition: Condition): string {
  const described = describeCondition(condition);
  return described === '' ? '' : `: ${described}`;
}
