/** The Live pages' URLs: a cluster's namespaces, a namespace's objects of one resource or its events, one object. */
import { type ApiResource, resourceKey } from '../kube/discovery.ts';

export function liveClusterPage(cluster: string): string {
  return `/live/${encodeURIComponent(cluster)}`;
}

export function liveNamespacePage(cluster: string, namespace: string, view?: { resource: ApiResource } | 'events'): string {
  const base = `${liveClusterPage(cluster)}/ns/${encodeURIComponent(namespace)}`;
  if (view === 'events') return `${base}/events`;
  return view ? `${base}?resource=${encodeURIComponent(resourceKey(view.resource))}` : base;
}

export function liveObjectPage(cluster: string, namespace: string, resource: ApiResource, name: string): string {
  return `${liveClusterPage(cluster)}/ns/${encodeURIComponent(namespace)}/${encodeURIComponent(resourceKey(resource))}/${encodeURIComponent(name)}`;
}
