/**
 * The UI's reads as TanStack queries. Keys are prefixes by kind (['services', …], ['pipelines', …]) so a live
 * event invalidates every view of that kind at once (live-updates.tsx).
 */
import { useQuery } from '@tanstack/react-query';
import { fleet, reviewAccess } from './fleet.ts';
import { usePollingFallback } from './live-updates.tsx';
import type { AccessCheck } from './types.ts';

/** `enabled` false where there is no fleet (gantry webui). */
export function useClusters(enabled = true) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['clusters'], queryFn: () => fleet.listClusters(), refetchInterval, enabled });
}

export function useServices() {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['services'], queryFn: () => fleet.listServices(), refetchInterval });
}

export function useService(cluster: string, name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['services', cluster, name], queryFn: () => fleet.getService(cluster, name), refetchInterval });
}

/** The service's docs at its current revision; read again when the service changes (its revision's key). */
export function useServiceDocs(cluster: string, name: string) {
  return useQuery({ queryKey: ['services', cluster, name, 'docs'], queryFn: () => fleet.serviceDocs(cluster, name) });
}

export function useRevisions(cluster: string, name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({
    queryKey: ['services', cluster, name, 'revisions'],
    queryFn: () => fleet.listRevisions(cluster, name),
    refetchInterval,
  });
}

export function usePipelines() {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['pipelines'], queryFn: () => fleet.listPipelines(), refetchInterval });
}

export function usePipeline(name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['pipelines', name], queryFn: () => fleet.getPipeline(name), refetchInterval });
}

export function usePromotions(name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['pipelines', name, 'promotions'], queryFn: () => fleet.listPromotions(name), refetchInterval });
}

export function useGlobalServices() {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['globalservices'], queryFn: () => fleet.listGlobalServices(), refetchInterval });
}

export function useGlobalService(name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['globalservices', name], queryFn: () => fleet.getGlobalService(name), refetchInterval });
}

/** The global service's newest rollout; a 404 (none yet) is not retried. */
export function useRollout(name: string) {
  const refetchInterval = usePollingFallback();
  return useQuery({ queryKey: ['globalservices', name, 'rollout'], queryFn: () => fleet.getRollout(name), refetchInterval, retry: false });
}

/**
 * Whether the user may do each of `checks` (POST /v1/access-review), in order; undefined until the server said,
 * so an action appears only once allowed. Rights change rarely, and a refused action still answers 403.
 */
export function useAllowed(checks: readonly AccessCheck[], enabled = true): boolean[] | undefined {
  return useQuery({
    queryKey: ['access', checks],
    queryFn: () => reviewAccess(checks),
    enabled,
    staleTime: 60_000,
  }).data;
}
