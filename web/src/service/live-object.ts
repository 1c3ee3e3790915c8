/**
 * An object as the cluster has it now, read through the auth proxy as the logged-in user (so the cluster's RBAC
 * decides what they see). The kind's resource name comes from the cluster's discovery, cached for the session.
 */
import { type QueryClient, useQuery, useQueryClient } from '@tanstack/react-query';
import { clusterGet } from '../api/fleet.ts';
import type { Component } from '../api/types.ts';
import type { KubeObject } from '../kube/kube-object.ts';

interface ApiResourceList {
  resources: { name: string; kind: string; namespaced: boolean }[];
}

export function useLiveObject(cluster: string, service: string, component: Component) {
  const queryClient = useQueryClient();
  const { group, version, kind, namespace, name } = component;
  return useQuery({
    // Under the service's key: a live event about the service fetches it again.
    queryKey: ['services', cluster, service, 'object', group, version, kind, namespace, name],
    queryFn: () => liveObject(queryClient, cluster, component),
    retry: false,
  });
}

async function liveObject(queryClient: QueryClient, cluster: string, component: Component): Promise<KubeObject> {
  const base = component.group ? `/apis/${component.group}/${component.version}` : `/api/${component.version}`;
  const discovery = await queryClient.fetchQuery({
    queryKey: ['discovery', cluster, base],
    queryFn: () => clusterGet<ApiResourceList>(cluster, base),
    staleTime: Infinity,
  });
  const resource = discovery.resources.find((candidate) => candidate.kind === component.kind && !candidate.name.includes('/'));
  if (!resource) throw new Error(`cluster ${cluster} does not serve ${component.kind} in ${base.slice(1)}`);
  const scope = resource.namespaced ? `/namespaces/${encodeURIComponent(component.namespace)}` : '';
  return await clusterGet<KubeObject>(cluster, `${base}${scope}/${resource.name}/${encodeURIComponent(component.name)}`);
}
