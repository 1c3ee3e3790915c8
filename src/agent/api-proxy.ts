/**
 * The agent's end of the auth proxy: each tunnel stream the server opens (tunnel/mux.ts) becomes one request sent
 * with the agent's credentials but impersonating the user and groups the server named (Impersonate-User /
 * Impersonate-Group, as Plural's agent does), so the cluster's RBAC decides what the user may do there.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { apiServerForwarder } from '../kube/api-forwarder.ts';
import type { Logger } from '../logger.ts';
import type { TunnelRequest, TunnelStream } from '../tunnel/mux.ts';

export interface ApiProxy {
  /** Forwards one tunnel stream; never throws (failures become a 502 or a reset stream). */
  forward(stream: TunnelStream, request: TunnelRequest): void;
  close(): Promise<void>;
}

/** The agent's end of the auth proxy: tunnel streams forwarded impersonating the user the server named. */
export async function apiProxy(kubeConfig: KubeConfig, log: Logger): Promise<ApiProxy> {
  const forwarder = await apiServerForwarder(kubeConfig, log, 'the agent');
  return {
    forward: (stream, tunnelled) => {
      const abort = new AbortController();
      stream.once('close', () => abort.abort(new Error('the user went away')));
      const { method, path, headers, user, groups } = tunnelled;
      void forwarder.forward(
        { method, path, headers, body: stream, impersonate: { user, groups } },
        { respond: (status, responseHeaders) => stream.respond({ status, headers: responseHeaders }), body: stream },
        abort.signal,
      );
    },
    close: () => forwarder.close(),
  };
}
