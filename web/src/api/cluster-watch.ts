/**
 * A Kubernetes watch through the auth proxy: the API server streams one JSON event per line for as long as the
 * request stays open (the proxy and the agent's tunnel stream it through), read here with fetch and the body's
 * ReadableStream, as EventSource cannot send a watch's query or read its errors.
 */
import { ApiError } from '../../../src/client/fleet-client.ts';
import { clusterUrl } from './fleet.ts';

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** The watch's resourceVersion is too old (HTTP 410 Gone, or an ERROR event saying so): list again, then watch. */
export class WatchExpired extends Error {}

/**
 * Follows `path` (a list, e.g. /api/v1/pods) from `resourceVersion`, handing each event to `onEvent`, until the
 * API server ends the watch (its timeout) or `signal` fires; bookmarks keep the resourceVersion fresh.
 * @throws WatchExpired when the resourceVersion is gone; ApiError for another error answer or event.
 */
export async function watchCluster<T>(
  cluster: string,
  path: string,
  resourceVersion: string,
  signal: AbortSignal,
  onEvent: (event: WatchEvent<T>) => void,
): Promise<void> {
  const query = new URLSearchParams({ watch: 'true', resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: '300' });
  const response = await fetch(clusterUrl(cluster, `${path}${path.includes('?') ? '&' : '?'}${query}`), {
    credentials: 'same-origin',
    signal,
  });
  if (response.status === 410) throw new WatchExpired(`the watch of ${path} expired`);
  if (!response.ok || !response.body) {
    const status = (await response.json().catch(() => undefined)) as { message?: string } | undefined;
    throw new ApiError(response.status, status?.message ?? `watch ${path}: HTTP ${response.status}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim()) handle(JSON.parse(line) as WatchEvent<T>, onEvent);
    }
  }
}

function handle<T>(event: WatchEvent<T>, onEvent: (event: WatchEvent<T>) => void): void {
  if (event.type !== 'ERROR') return onEvent(event);
  const status = event.object as { code?: number; message?: string };
  if (status.code === 410) throw new WatchExpired(status.message ?? 'the watch expired');
  throw new ApiError(status.code ?? 500, status.message ?? 'the watch failed');
}
