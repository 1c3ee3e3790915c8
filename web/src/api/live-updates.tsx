/**
 * Live updates: GET /v1/events (server-sent events) tells which part of the fleet changed, and the matching
 * queries are fetched again, so no page needs a refresh button. While the stream is down (the server restarting,
 * a proxy that cuts it) queries poll instead, and each time the stream opens everything is fetched once, for the
 * events missed before it: a page's first queries race its stream, and a change between a query's answer and the
 * stream's start would otherwise never show.
 */
import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react';
import type { FleetChange } from './types.ts';

type LiveStatus = 'connecting' | 'live' | 'offline';

/** How often queries poll while the stream is down. */
const FALLBACK_POLL_MS = 5_000;
/** EventSource retries by itself after a dropped connection, but gives up on an error answer; then this. */
const RECONNECT_MS = 5_000;

const LiveStatusContext = createContext<LiveStatus>('connecting');

/** Follows the event stream while mounted (so only once logged in) and tells its state to useLiveStatus. */
export function LiveUpdates({ children }: { children: ReactNode }) {
  const status = useLiveUpdates();
  return <LiveStatusContext.Provider value={status}>{children}</LiveStatusContext.Provider>;
}

export function useLiveStatus(): LiveStatus {
  return useContext(LiveStatusContext);
}

/** The refetchInterval of a query: none while events arrive, a poll while they do not. */
export function usePollingFallback(): number | false {
  return useLiveStatus() === 'live' ? false : FALLBACK_POLL_MS;
}

function useLiveUpdates(): LiveStatus {
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<LiveStatus>('connecting');
  useEffect(() => {
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const connect = () => {
      source = new EventSource('/v1/events');
      source.onopen = () => {
        void queryClient.invalidateQueries();
        setStatus('live');
      };
      source.onmessage = (message: MessageEvent<string>) => invalidateFor(queryClient, JSON.parse(message.data) as FleetChange);
      source.onerror = () => {
        setStatus('offline');
        if (source?.readyState !== EventSource.CLOSED) return;
        retry = setTimeout(connect, RECONNECT_MS);
      };
    };
    connect();
    return () => {
      clearTimeout(retry);
      source?.close();
    };
  }, [queryClient]);
  return status;
}

/** Marks stale what a change may have touched; the queries on screen fetch again at once. */
function invalidateFor(queryClient: QueryClient, change: FleetChange): void {
  switch (change.kind) {
    case 'cluster':
      void queryClient.invalidateQueries({ queryKey: ['clusters'] });
      break;
    case 'service':
      void queryClient.invalidateQueries({ queryKey: ['services'] });
      // A stage shows its services' status and revision.
      void queryClient.invalidateQueries({ queryKey: ['pipelines'] });
      // A global service shows its copies, and its rollout follows their reports.
      void queryClient.invalidateQueries({ queryKey: ['globalservices'] });
      break;
    case 'pipeline':
      void queryClient.invalidateQueries({ queryKey: ['pipelines'] });
      break;
    case 'globalservice':
      void queryClient.invalidateQueries({ queryKey: ['globalservices'] });
      break;
  }
}
