/**
 * A read of a cluster's API that follows changes by asking again every few seconds while the page is visible
 * (TanStack pauses the interval in a hidden tab): for the Live pages, whose namespaces, objects and events would
 * each need a watch of their own (a browser holds only six connections to a server).
 */
import { useQuery } from '@tanstack/react-query';
import { clusterGet } from '../api/fleet.ts';

const POLL_MS = 5_000;

export function usePolled<T>(cluster: string, path: string, enabled = true) {
  return useQuery({
    queryKey: ['kube', cluster, 'polled', path],
    queryFn: () => clusterGet<T>(cluster, path),
    refetchInterval: POLL_MS,
    enabled,
    retry: false,
  });
}
