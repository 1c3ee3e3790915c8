/**
 * A list of a cluster's objects kept current by a Kubernetes watch through the auth proxy: listed once (a query, so
 * every view of it shares it), then each event of the watch is applied to the query's data, so what changes in the
 * cluster shows at once without polling. When the API server ends the watch it is resumed from the last
 * resourceVersion seen; when that is too old the list is fetched again; after a failure it waits (1 s, doubling up
 * to 30 s) and tries again. A list that fails (no such resource, no right) is the query's error.
 */
import { type QueryClient, type QueryKey, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { ApiError } from '../../../src/client/fleet-client.ts';
import { watchCluster, type WatchEvent, WatchExpired } from '../api/cluster-watch.ts';
import { clusterGet } from '../api/fleet.ts';
import { type KubeList, type KubeObject, objectKey } from './kube-object.ts';

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export function useWatchedList<T extends KubeObject>(cluster: string, path: string) {
  const queryClient = useQueryClient();
  const queryKey = watchedListKey(cluster, path);
  const query = useQuery({
    queryKey,
    queryFn: () => clusterGet<KubeList<T>>(cluster, path),
    // The watch keeps it fresh; a query of its own would only list it again.
    staleTime: Infinity,
  });
  const listed = query.isSuccess;
  useEffect(() => {
    if (!listed) return;
    const abort = new AbortController();
    void follow<T>(queryClient, watchedListKey(cluster, path), cluster, path, abort.signal);
    return () => abort.abort();
  }, [queryClient, cluster, path, listed]);
  return query;
}

export function watchedListKey(cluster: string, path: string): QueryKey {
  return ['kube', cluster, 'watched', path];
}

async function follow<T extends KubeObject>(
  queryClient: QueryClient,
  queryKey: QueryKey,
  cluster: string,
  path: string,
  signal: AbortSignal,
): Promise<void> {
  let wait = RETRY_FIRST_MS;
  while (!signal.aborted) {
    const current = queryClient.getQueryData<KubeList<T>>(queryKey);
    try {
      await watchCluster<T>(cluster, path, current?.metadata.resourceVersion ?? '', signal, (event) =>
        queryClient.setQueryData<KubeList<T>>(queryKey, (list) => list && applied(list, event)),
      );
      wait = RETRY_FIRST_MS;
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof WatchExpired) {
        const relisted = await queryClient
          .fetchQuery({ queryKey, queryFn: () => clusterGet<KubeList<T>>(cluster, path), staleTime: 0 })
          .then(
            () => true,
            () => false,
          );
        // A list that failed is the query's error, shown where the list is; the effect starts again once one succeeds.
        if (relisted) continue;
        return;
      }
      // The right to watch went away, or the resource did: nothing to resume.
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    }
  }
}

/** The list with one watch event applied; its resourceVersion is the event's, to resume from. */
function applied<T extends KubeObject>(list: KubeList<T>, event: WatchEvent<T>): KubeList<T> {
  const metadata = { ...list.metadata, resourceVersion: event.object.metadata.resourceVersion ?? list.metadata.resourceVersion };
  if (event.type === 'BOOKMARK') return { ...list, metadata };
  const key = objectKey(event.object);
  const others = list.items.filter((item) => objectKey(item) !== key);
  if (event.type === 'DELETED') return { ...list, metadata, items: others };
  const index = list.items.findIndex((item) => objectKey(item) === key);
  const items = index < 0 ? [...others, event.object] : list.items.map((item, at) => (at === index ? event.object : item));
  return { ...list, metadata, items };
}
