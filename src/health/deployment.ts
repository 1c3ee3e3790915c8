import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition, fieldAt, integerAt, unobservedGeneration } from './fields.ts';
import { withReplicaFailure } from './replicaset.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apps/v1 Deployment, as `kubectl rollout status` defines it, plus the checks kstatus adds:
 * - InProgress until status.observedGeneration catches up with metadata.generation;
 * - Failed when the Progressing condition has reason ProgressDeadlineExceeded (the controller gave up after
 *   spec.progressDeadlineSeconds);
 * - Ready when spec.paused: the controller does not roll a paused Deployment forward, so waiting could only time out
 *   (argo reports it as Suspended);
 * - InProgress while status.updatedReplicas < spec.replicas (default 1), while old replicas remain
 *   (status.replicas > updatedReplicas), while surplus replicas remain (status.replicas > spec.replicas, kstatus) and
 *   while status.availableReplicas < spec.replicas;
 * - InProgress while the Available condition is False;
 * - otherwise Ready.
 */
export function deploymentReadiness(deployment: KubeObject): Readiness {
  const unobserved = unobservedGeneration(deployment);
  if (unobserved) return unobserved;

  const progressing = conditionOf(deployment, 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') return failed(`progress deadline exceeded: ${progressing.message}`);

  if (fieldAt(deployment, 'spec', 'paused') === true) return ready('paused: the rollout is not waited for');

  const pending = pendingRollout(deployment);
  if (pending !== undefined) return inProgress(withReplicaFailure(deployment, `rollout in progress: ${pending}`));

  const available = conditionOf(deployment, 'Available');
  if (available?.status === 'False') return inProgress(`not available: ${describeCondition(available)}`);

  const wanted = integerAt(deployment, 'spec', 'replicas') ?? 1;
  return ready(`${wanted} of ${wanted} replicas updated and available`);
}

/** What the rollout still waits for, by the replica counters; undefined when they all match spec.replicas. */
function pendingRollout(deployment: KubeObject): string | undefined {
  const wanted = integerAt(deployment, 'spec', 'replicas') ?? 1;
  const total = integerAt(deployment, 'status', 'replicas') ?? 0;
  const updated = integerAt(deployment, 'status', 'updatedReplicas') ?? 0;
  const available = integerAt(deployment, 'status', 'availableReplicas') ?? 0;
  if (updated < wanted) return `${updated} of ${wanted} replicas updated`;
  if (total > updated) return `${total - updated} old replicas pending termination`;
  if (total > wanted) return `${total - wanted} surplus replicas pending termination`;
  if (available < wanted) return `${available} of ${wanted} updated replicas available`;
  return undefined;
}
