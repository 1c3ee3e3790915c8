/**
 * The four healths every badge shows (as Argo CD's, familiar to most operators), from the API's words for
 * clusters, services and their objects.
 */
import type { Cluster, Component } from './api/types.ts';

export type Health = 'Healthy' | 'Progressing' | 'Degraded' | 'Unknown';

export interface HealthView {
  health: Health;
  /** The badge's text when it says more than the health. */
  label?: string;
  detail: string;
}

export function clusterHealth(cluster: Cluster): HealthView {
  switch (cluster.health) {
    case 'HEALTHY':
      return { health: 'Healthy', detail: 'the agent pinged in the last 5 minutes' };
    case 'UNHEALTHY':
      return { health: 'Degraded', label: 'Unreachable', detail: 'the agent has not pinged for more than 5 minutes' };
    case 'UNKNOWN':
      return { health: 'Unknown', detail: 'the agent has not pinged yet' };
  }
}

/**
 * A service's health; on a cluster whose agent is not reporting (when the cluster is known), a revision not yet
 * applied is waiting for the agent, not progressing; objects deleted or changed in the cluster since they were
 * applied (when the components are known) make it Drifted, as Argo CD's OutOfSync.
 */
export function serviceHealth(
  service: { status: string; deleting: boolean; components?: readonly Component[] },
  cluster?: Pick<Cluster, 'name' | 'health'>,
): HealthView {
  if (service.deleting) return { health: 'Progressing', label: 'Deleting', detail: 'the agent is deleting its objects' };
  const drifted = service.components?.filter((component) => component.drift).length ?? 0;
  if (drifted > 0 && service.status !== 'failed')
    return {
      health: 'Degraded',
      label: 'Drifted',
      detail: `${drifted} object${drifted === 1 ? '' : 's'} deleted or changed in the cluster since the agent applied ${drifted === 1 ? 'it' : 'them'}`,
    };
  if (service.status === 'stale' && cluster && cluster.health !== 'HEALTHY')
    return {
      health: 'Unknown',
      label: 'Waiting for agent',
      detail: `the agent of ${cluster.name} is not reporting; it applies the revision once it is back`,
    };
  return statusHealth(service.status);
}

/** A service status as the API words it (a pipeline stage says `missing` for a deleted service). */
function statusHealth(status: string): HealthView {
  switch (status) {
    case 'healthy':
      return { health: 'Healthy', detail: 'every object applied and ready' };
    case 'synced':
      return { health: 'Progressing', detail: 'applied; waiting for its objects to be ready' };
    case 'stale':
      return { health: 'Progressing', detail: 'the current revision is not applied yet' };
    case 'failed':
      return { health: 'Degraded', detail: 'an object failed or the agent reported an error' };
    default:
      return { health: 'Unknown', label: status === 'missing' ? 'Missing' : undefined, detail: `status ${status}` };
  }
}

export function componentHealth(component: Component): HealthView {
  if (component.drift?.state === 'MISSING') return { health: 'Degraded', label: 'Missing', detail: 'deleted in the cluster' };
  switch (component.state) {
    case 'RUNNING':
      return { health: 'Healthy', detail: 'ready' };
    case 'PENDING':
      return { health: 'Progressing', detail: 'not ready yet' };
    case 'FAILED':
      return { health: 'Degraded', detail: 'failed' };
    case 'PAUSED':
      return { health: 'Unknown', label: 'Paused', detail: 'paused' };
  }
}
