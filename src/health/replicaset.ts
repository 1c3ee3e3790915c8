import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition, integerAt, unobservedGeneration } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apps/v1 ReplicaSet, by the rules argo gitops-engine and kstatus use:
 * - InProgress until status.observedGeneration catches up with metadata.generation;
 * - InProgress while status.availableReplicas < spec.replicas (default 1), quoting the ReplicaFailure condition when
 *   the controller cannot create pods (quota, admission);
 * - InProgress while status.replicas > spec.replicas (surplus pods still terminating);
 * - otherwise Ready.
 * ReplicaFailure alone is not Failed (argo says Degraded, kstatus InProgress): the controller keeps retrying, and the
 * usual causes (quota, a webhook that is not up yet) go away without a new spec.
 */
export function replicaSetReadiness(replicaSet: KubeObject): Readiness {
  const unobserved = unobservedGeneration(replicaSet);
  if (unobserved) return unobserved;

  const wanted = integerAt(replicaSet, 'spec', 'replicas') ?? 1;
  const available = integerAt(replicaSet, 'status', 'availableReplicas') ?? 0;
  if (available < wanted) return inProgress(withReplicaFailure(replicaSet, `${available} of ${wanted} replicas available`));

  const surplus = (integerAt(replicaSet, 'status', 'replicas') ?? 0) - wanted;
  if (surplus > 0) return inProgress(`${surplus} surplus replicas pending termination`);

  return ready(`${wanted} of ${wanted} replicas available`);
}

/**
 * Appends the ReplicaFailure condition (set on ReplicaSets, and copied onto their Deployment, when pods cannot be
 * created) to a message about missing replicas: it is the only place the reason shows up on the object itself.
 */
export function withReplicaFailure(object: KubeObject, message: string): string {
  const failure = conditionOf(object, 'ReplicaFailure');
  return failure?.status === 'True' ? `${message}; ${describeCondition(failure)}` : message;
}
