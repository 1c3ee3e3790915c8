import type { KubeObject } from '../kube/object.ts';
import { integerAt, stringAt, unobservedGeneration } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apps/v1 StatefulSet, as `kubectl rollout status` defines it (and argo gitops-engine applies it):
 * - InProgress until status.observedGeneration catches up with metadata.generation;
 * - InProgress while status.readyReplicas < spec.replicas (default 1), whatever the update strategy: even with
 *   OnDelete, the pods must exist and be ready;
 * - InProgress while status.replicas > spec.replicas (pods of a scale-down still terminating; kstatus);
 * - Ready for updateStrategy OnDelete: pods only move to the new revision when someone deletes them, so no rollout
 *   is waited for;
 * - for RollingUpdate, InProgress while status.updatedReplicas < spec.replicas - rollingUpdate.partition (default 0):
 *   pods with an ordinal below the partition deliberately stay on the old revision;
 * - otherwise Ready.
 * The currentRevision == updateRevision check of kubectl is not used: the API server always defaults the partition
 * (to 0), so kubectl never reaches it either.
 */
export function statefulSetReadiness(statefulSet: KubeObject): Readiness {
  const unobserved = unobservedGeneration(statefulSet);
  if (unobserved) return unobserved;

  const wanted = integerAt(statefulSet, 'spec', 'replicas') ?? 1;
  const readyPods = integerAt(statefulSet, 'status', 'readyReplicas') ?? 0;
  if (readyPods < wanted) return inProgress(`${readyPods} of ${wanted} pods ready`);

  const surplus = (integerAt(statefulSet, 'status', 'replicas') ?? 0) - wanted;
  if (surplus > 0) return inProgress(`${surplus} surplus pods pending termination`);

  if (stringAt(statefulSet, 'spec', 'updateStrategy', 'type') === 'OnDelete') {
    return ready(`${wanted} of ${wanted} pods ready (OnDelete: pods are updated when deleted)`);
  }

  const partition = integerAt(statefulSet, 'spec', 'updateStrategy', 'rollingUpdate', 'partition') ?? 0;
  const toUpdate = Math.max(wanted - partition, 0);
  const updated = integerAt(statefulSet, 'status', 'updatedReplicas') ?? 0;
  if (updated < toUpdate) {
    const scope = partition > 0 ? ` (partition ${partition})` : '';
    return inProgress(`rollout in progress: ${updated} of ${toUpdate} pods updated${scope}`);
  }
  return ready(`${wanted} of ${wanted} pods ready, ${updated} updated`);
}
