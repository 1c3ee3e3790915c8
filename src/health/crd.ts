import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an apiextensions.k8s.io/v1 CustomResourceDefinition, by its conditions as kstatus reads them:
 * - Failed when NamesAccepted is False: its plural, kind or short names clash with another CRD, and it will not be
 *   served until its spec changes (Helm and Kluctl stop waiting here too, but call it ready);
 * - Ready when Established is True: the API server serves the new resource, so objects of it can be applied;
 * - Failed when Established is False for any reason but Installing;
 * - otherwise InProgress.
 */
export function crdReadiness(crd: KubeObject): Readiness {
  const namesAccepted = conditionOf(crd, 'NamesAccepted');
  if (namesAccepted?.status === 'False') return failed(`names not accepted: ${describeCondition(namesAccepted)}`);

  const established = conditionOf(crd, 'Established');
  if (established?.status === 'True') return ready('Established');
  if (established?.status === 'False' && established.reason !== 'Installing') {
    return failed(`not established: ${describeCondition(established)}`);
  }
  if (established === undefined) return inProgress('waiting for the Established condition');
  return inProgress(`not established yet: ${describeCondition(established)}`);
}
