/** The fleet page's filter: a search over names, namespaces and tags, a health, a cluster. Empty means any. */
import type { Cluster, Service } from '../api/types.ts';
import { clusterHealth, serviceHealth } from '../health.ts';

export interface FleetFilter {
  text: string;
  health: string;
  cluster: string;
}

export function matchingClusters(clusters: readonly Cluster[], filter: FleetFilter): Cluster[] {
  return clusters.filter(
    (cluster) =>
      (!filter.cluster || cluster.name === filter.cluster) &&
      (!filter.health || clusterHealth(cluster).health === filter.health) &&
      matchesText(
        [cluster.name, cluster.distro ?? '', ...Object.entries(cluster.tags).map(([key, value]) => `${key}=${value}`)],
        filter.text,
      ),
  );
}

export function matchingServices(services: readonly Service[], clusters: readonly Cluster[], filter: FleetFilter): Service[] {
  return services.filter(
    (service) =>
      (!filter.cluster || service.cluster === filter.cluster) &&
      (!filter.health || serviceHealth(service, clusterOf(clusters, service)).health === filter.health) &&
      matchesText([service.name, service.cluster, service.namespace, `${service.cluster}/${service.name}`], filter.text),
  );
}

export function clusterOf(clusters: readonly Cluster[], service: Service): Cluster | undefined {
  return clusters.find((cluster) => cluster.name === service.cluster);
}

/** Every word of `text` is in one of `fields`, ignoring case. */
function matchesText(fields: readonly string[], text: string): boolean {
  const haystack = fields.join(' ').toLowerCase();
  return text
    .toLowerCase()
    .split(/\s+/)
    .every((word) => haystack.includes(word));
}
