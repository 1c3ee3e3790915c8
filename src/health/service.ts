import type { KubeObject } from '../kube/object.ts';
import { listAt, stringAt } from './fields.ts';
import { inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of a v1 Service (argo gitops-engine and Kluctl):
 * - type LoadBalancer: Ready once status.loadBalancer.ingress has an entry, or when spec.externalIPs are set (Kluctl:
 *   the Service is then reachable without the load balancer); else InProgress, which lasts forever on a cluster that
 *   has no load balancer implementation, so the message names the field it waits for;
 * - every other type: Ready, the API server assigns the cluster IP on creation.
 */
export function serviceReadiness(service: KubeObject): Readiness {
  if (stringAt(service, 'spec', 'type') !== 'LoadBalancer') return ready();
  if (listAt(service, 'spec', 'externalIPs').length > 0) return ready('external IPs set');

  const addresses = listAt(service, 'status', 'loadBalancer', 'ingress').map(
    (ingress) => stringAt(ingress, 'ip') ?? stringAt(ingress, 'hostname') ?? '?',
  );
  if (addresses.length > 0) return ready(`load balancer at ${addresses.join(', ')}`);
  return inProgress('waiting for a load balancer address (status.loadBalancer.ingress is empty)');
}
