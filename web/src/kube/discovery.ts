/**
 * Which kinds a cluster serves, under which resource names (`pods`, `deployments`), as its discovery says, cached
 * for the session. Aggregated discovery (Kubernetes ≥ 1.26: two requests for every group) is asked first; an API
 * server without it is asked group by group. Pages name a resource as kubectl does, `pods.v1` or
 * `deployments.v1.apps`, so a URL says exactly which one it is.
 */
import { type QueryClient, useQuery, useQueryClient } from '@tanstack/react-query';
import { clusterGet } from '../api/fleet.ts';

export interface ApiResource {
  group: string;
  version: string;
  kind: string;
  /** The plural resource name, e.g. `deployments`. */
  resource: string;
  namespaced: boolean;
  verbs: string[];
}

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

interface GroupDiscoveryList {
  kind: string;
  items?: {
    metadata?: { name?: string };
    versions: {
      version: string;
      resources: { resource: string; responseKind?: { kind: string }; scope: string; verbs: string[] }[];
    }[];
  }[];
  groups?: { name: string; preferredVersion: { groupVersion: string } }[];
}

interface ResourceList {
  resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[];
}

export function useApiResources(cluster: string) {
  const queryClient = useQueryClient();
  return useQuery({ queryKey: ['kube', cluster, 'discovery'], queryFn: () => apiResources(queryClient, cluster), staleTime: Infinity });
}

/** `deployments.v1.apps`, `pods.v1`: resource, version and group, as kubectl names a resource fully. */
export function resourceKey(resource: Pick<ApiResource, 'resource' | 'version' | 'group'>): string {
  return [resource.resource, resource.version, resource.group].filter(Boolean).join('.');
}

export function parseResourceKey(key: string): Pick<ApiResource, 'resource' | 'version' | 'group'> {
  const [resource = '', version = '', ...group] = key.split('.');
  return { resource, version, group: group.join('.') };
}

/** The API path of a resource's objects (in `namespace`), or of one of them. */
export function resourcePath(resource: Pick<ApiResource, 'resource' | 'version' | 'group'>, namespace?: string, name?: string): string {
  const base = resource.group ? `/apis/${resource.group}/${resource.version}` : `/api/${resource.version}`;
  const scope = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${scope}/${resource.resource}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** The resource serving `kind` of `group` (any version: an object names the one it was written in). */
export function findResource(resources: readonly ApiResource[], group: string, kind: string): ApiResource | undefined {
  return resources.find((candidate) => candidate.group === group && candidate.kind === kind);
}

/** Every resource of the preferred version of each group, subresources left out. */
async function apiResources(queryClient: QueryClient, cluster: string): Promise<ApiResource[]> {
  const [core, groups] = await Promise.all([
    clusterGet<GroupDiscoveryList>(cluster, '/api', AGGREGATED),
    clusterGet<GroupDiscoveryList>(cluster, '/apis', AGGREGATED),
  ]);
  if (core.kind === 'APIGroupDiscoveryList' && groups.kind === 'APIGroupDiscoveryList') return [...aggregated(core), ...aggregated(groups)];
  const lists = await Promise.all([
    groupResources(queryClient, cluster, '', 'v1'),
    ...(groups.groups ?? []).map((group) => {
      const [name = '', version = ''] = group.preferredVersion.groupVersion.split('/');
      return groupResources(queryClient, cluster, name, version);
    }),
  ]);
  return lists.flat();
}

function aggregated(list: GroupDiscoveryList): ApiResource[] {
  return (list.items ?? []).flatMap((group) => {
    const preferred = group.versions[0];
    if (!preferred) return [];
    return preferred.resources.map((resource) => ({
      group: group.metadata?.name ?? '',
      version: preferred.version,
      kind: resource.responseKind?.kind ?? resource.resource,
      resource: resource.resource,
      namespaced: resource.scope === 'Namespaced',
      verbs: resource.verbs,
    }));
  });
}

async function groupResources(queryClient: QueryClient, cluster: string, group: string, version: string): Promise<ApiResource[]> {
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const list = await queryClient.fetchQuery({
    queryKey: ['kube', cluster, 'discovery', path],
    queryFn: () => clusterGet<ResourceList>(cluster, path),
    staleTime: Infinity,
  });
  return list.resources
    .filter((resource) => !resource.name.includes('/'))
    .map((resource) => ({
      group,
      version,
      kind: resource.kind,
      resource: resource.name,
      namespaced: resource.namespaced,
      verbs: resource.verbs,
    }));
}
