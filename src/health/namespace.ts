import type { KubeObject } from '../kube/object.ts';
import { conditionsOf, describeCondition, stringAt } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of a v1 Namespace, by status.phase:
 * - Terminating: InProgress, since objects cannot be created in it; the message quotes the conditions the namespace
 *   controller sets to True while deletion is blocked (NamespaceContentRemaining, NamespaceFinalizersRemaining,
 *   NamespaceDeletionContentFailure, ...);
 * - Active, or no phase (the API server sets Active on creation, so only a hand-written object lacks it): Ready.
 */
export function namespaceReadiness(namespace: KubeObject): Readiness {
  const phase = stringAt(namespace, 'status', 'phase');
  if (phase !== 'Terminating') return ready(phase ?? '');
  const blockers = conditionsOf(namespace)
    .filter((condition) => condition.status === 'True')
    .map(describeCondition);
  return inProgress(blockers.length > 0 ? `Terminating: ${blockers.join('; ')}` : 'Terminating');
}
