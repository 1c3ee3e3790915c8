import type { KubeObject } from '../kube/object.ts';
import { integerAt, stringAt, unobservedGeneration } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apps/v1 DaemonSet, as `kubectl rollout status` defines it:
 * - InProgress until status.observedGeneration catches up with metadata.generation (a missing one counts as not yet
 *   observed, as kstatus requires);
 * - for updateStrategy RollingUpdate, InProgress while status.updatedNumberScheduled < status.desiredNumberScheduled;
 *   with OnDelete pods only move to the new template when someone deletes them, so that is not waited for (argo);
 * - InProgress while status.numberAvailable < status.desiredNumberScheduled, for both strategies;
 * - otherwise Ready.
 * Kluctl tolerates maxUnavailable unavailable pods here; Gantry waits for all of them, as kubectl does.
 */
export function daemonSetReadiness(daemonSet: KubeObject): Readiness {
  const unobserved = unobservedGeneration(daemonSet);
  if (unobserved) return unobserved;

  const desired = integerAt(daemonSet, 'status', 'desiredNumberScheduled') ?? 0;
  const onDelete = stringAt(daemonSet, 'spec', 'updateStrategy', 'type') === 'OnDelete';
  const updated = integerAt(daemonSet, 'status', 'updatedNumberScheduled') ?? 0;
  if (!onDelete && updated < desired) return inProgress(`rollout in progress: ${updated} of ${desired} pods updated`);

  const available = integerAt(daemonSet, 'status', 'numberAvailable') ?? 0;
  if (available < desired) return inProgress(`${available} of ${desired} pods available`);

  return ready(`${desired} of ${desired} pods available${onDelete ? ' (OnDelete: pods are updated when deleted)' : ''}`);
}
