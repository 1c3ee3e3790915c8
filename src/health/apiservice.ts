import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apiregistration.k8s.io APIService, by its Available condition (argo gitops-engine):
 * - Available True: Ready, the aggregated API answers;
 * - Available False or Unknown: InProgress quoting it (FailedDiscoveryCheck, MissingEndpoints, ServiceNotFound):
 *   these clear once the backing pods are up, which is typically what is still being deployed;
 * - no Available condition yet: InProgress.
 */
export function apiServiceReadiness(apiService: KubeObject): Readiness {
  const available = conditionOf(apiService, 'Available');
  if (available === undefined) return inProgress('waiting for the Available condition');
  if (available.status === 'True') return ready(describeCondition(available));
  return inProgress(`not available: ${describeCondition(available)}`);
}
