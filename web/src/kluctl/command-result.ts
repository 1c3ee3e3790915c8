/**
 * A full command result, as the controller keeps it (src/deploy/result-store.ts): a Secret in the results
 * namespace named by the result's id, holding `result.json.gz`, the gzip-compressed JSON of the stored result.
 * Read through the auth proxy and unpacked by the browser's own DecompressionStream. Results never change, so one
 * read lasts the session.
 */
import { useQuery } from '@tanstack/react-query';
import { clusterGet } from '../api/fleet.ts';
import { RESULTS_NAMESPACE, type StoredResult } from './kluctl-resource.ts';

export function useCommandResult(cluster: string, id: string) {
  return useQuery({
    queryKey: ['kube', cluster, 'result', id],
    queryFn: () => readCommandResult(cluster, id),
    staleTime: Infinity,
    retry: false,
  });
}

async function readCommandResult(cluster: string, id: string): Promise<StoredResult> {
  const secret = await clusterGet<{ data?: Record<string, string> }>(
    cluster,
    `/api/v1/namespaces/${RESULTS_NAMESPACE}/secrets/${encodeURIComponent(id)}`,
  );
  const packed = secret.data?.['result.json.gz'];
  if (!packed) throw new Error(`${RESULTS_NAMESPACE}/${id} holds no command result`);
  const bytes = Uint8Array.from(atob(packed), (char) => char.charCodeAt(0));
  const unpacked = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(unpacked).text()) as StoredResult;
}
