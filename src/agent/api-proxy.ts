/**
 * The agent's end of the auth proxy: each tunnel stream the server opens (tunnel/mux.ts) becomes one request to
 * this cluster's Kubernetes API server, sent with the agent's credentials but impersonating the user and groups the
 * server named (Impersonate-User / Impersonate-Group, as Plural's agent does), so the cluster's RBAC decides what
 * the user may do there. Whatever credentials or impersonation headers the request carried are dropped first. The
 * response streams back until it ends or the user goes away (a watch, `kubectl logs -f`).
 */
import type { RequestOptions } from 'node:https';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import type { Logger } from '../logger.ts';
import type { TunnelRequest, TunnelStream } from '../tunnel/mux.ts';

/** Request headers never forwarded: the caller's credentials, impersonation, and hop-by-hop headers. */
const DROPPED_REQUEST_HEADERS =
  /^(authorization|cookie|impersonate-.*|host|connection|keep-alive|transfer-encoding|upgrade|proxy-.*|te|trailer|content-length)$/i;
/** Response headers the server's own HTTP layer sets. */
const DROPPED_RESPONSE_HEADERS = /^(connection|keep-alive|transfer-encoding|content-length)$/i;
const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface ApiProxy {
  /** Forwards one tunnel stream; never throws (failures become a 502 or a reset stream). */
  forward(stream: TunnelStream, request: TunnelRequest): void;
  close(): Promise<void>;
}

/** A proxy to the API server `kubeConfig`'s current context names, with its own connection pool. */
export async function apiProxy(kubeConfig: KubeConfig, log: Logger): Promise<ApiProxy> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const options: RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(options);
  // HTTP/1.1 for the reason kube/transport.ts gives: cancelled watches are everyday here.
  const dispatcher = new Agent({
    allowH2: false,
    connect: { ca: options.ca, cert: options.cert, key: options.key, rejectUnauthorized: options.rejectUnauthorized ?? true },
  });
  const base = server.replace(/\/$/, '');

  const forward = async (stream: TunnelStream, tunnelled: TunnelRequest) => {
    const abort = new AbortController();
    stream.once('close', () => abort.abort(new Error('the user went away')));
    let responded = false;
    try {
      const response = await request(`${base}${tunnelled.path}`, {
        method: tunnelled.method as 'GET',
        headers: { ...forwardedHeaders(tunnelled), ...(await credentials(kubeConfig)) },
        // A copy of the body: undici destroys a request body it is done with, and the tunnel stream carries the
        // response too.
        body: BODYLESS.has(tunnelled.method) ? null : stream.pipe(new PassThrough()),
        dispatcher,
        signal: abort.signal,
      });
      stream.respond({ status: response.statusCode, headers: keptHeaders(response.headers) });
      responded = true;
      await pipeline(response.body, stream);
    } catch (error) {
      if (abort.signal.aborted) return;
      if (responded) {
        stream.destroy(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      log.warn({ path: tunnelled.path, error: error instanceof Error ? error.message : String(error) }, 'proxied request failed');
      stream.respond({ status: 502, headers: { 'content-type': 'application/json' } });
      stream.end(JSON.stringify(apiServerUnreachable(error)));
    }
  };

  return {
    forward: (stream, tunnelled) => void forward(stream, tunnelled),
    close: () => dispatcher.close(),
  };
}

/** The agent's own Authorization header, read per request: a service account's token file is rotated. */
async function credentials(kubeConfig: KubeConfig): Promise<Record<string, string>> {
  const options: RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(options);
  return (options.headers ?? {}) as Record<string, string>;
}

/** The caller's headers minus what must not pass, plus who to impersonate. */
function forwardedHeaders(tunnelled: TunnelRequest): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(tunnelled.headers)) if (!DROPPED_REQUEST_HEADERS.test(name)) headers[name] = value;
  headers['impersonate-user'] = tunnelled.user;
  if (tunnelled.groups.length > 0) headers['impersonate-group'] = tunnelled.groups;
  return headers;
}

function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !DROPPED_RESPONSE_HEADERS.test(name)) kept[name] = value;
  return kept;
}

/** A Kubernetes Status, so kubectl prints the reason as it prints the API server's own errors. */
function apiServerUnreachable(error: unknown): object {
  const message = `the agent could not reach its Kubernetes API server: ${error instanceof Error ? error.message : String(error)}`;
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: 'ServiceUnavailable', code: 502 };
}
