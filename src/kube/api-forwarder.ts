/**
 * Forwarding requests to a cluster's Kubernetes API server with a kubeconfig's credentials: whatever credentials or
 * impersonation headers the request carried are dropped first, the kubeconfig's are added, and the response streams
 * back until it ends or the caller goes away (a watch, `kubectl logs -f`). Used by the agent's end of the auth proxy
 * (agent/api-proxy.ts), `gantry webui` (webui/server.ts), and the API server helm reads during a render
 * (render/helm-reads.ts).
 */
import type { RequestOptions } from 'node:https';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import type { Logger } from '../logger.ts';
import { messageOf } from '../problems.ts';

/** Request headers never forwarded: the caller's credentials, impersonation, and hop-by-hop headers. */
const DROPPED_REQUEST_HEADERS =
  /^(authorization|cookie|impersonate-.*|host|connection|keep-alive|transfer-encoding|upgrade|proxy-.*|te|trailer|content-length)$/i;
/** Response headers the caller's own HTTP layer sets. */
const DROPPED_RESPONSE_HEADERS = /^(connection|keep-alive|transfer-encoding|content-length)$/i;
const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** One request for the API server. */
export interface ApiCall {
  method: string;
  /** Path and query below the API server's root, e.g. `/api/v1/pods?watch=true`. */
  path: string;
  /** The caller's headers; those DROPPED_REQUEST_HEADERS names are left out. */
  headers: Record<string, string | string[] | undefined>;
  /** The request body, read unless the method has none. */
  body: Readable;
  /** Who the request acts as; the kubeconfig's own user when unset. */
  impersonate?: { user: string; groups: string[] };
}

/** Where the answer goes: its status and headers first, then its body. */
export interface ApiAnswer {
  respond(status: number, headers: Record<string, string | string[]>): void;
  body: Writable;
}

export interface ApiServerForwarder {
  /** The API server's URL. */
  server: string;
  /**
   * Sends `call` and streams the answer into `answer` until it ends or `signal` fires (the caller went away). Never
   * throws: a failure before the answer began is answered as a 502 Kubernetes Status, one after it destroys the
   * answer's body.
   */
  forward(call: ApiCall, answer: ApiAnswer, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * Forwards to the API server `kubeConfig`'s current context names, with its own connection pool; `who` names the
 * forwarder in the Status of a failure (`the agent`); `log`, when given, gets a warning for each failed request.
 */
export async function apiServerForwarder(kubeConfig: KubeConfig, log: Logger | undefined, who: string): Promise<ApiServerForwarder> {
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

  const forward = async (call: ApiCall, answer: ApiAnswer, signal: AbortSignal) => {
    let responded = false;
    try {
      const response = await request(`${base}${call.path}`, {
        method: call.method as 'GET',
        headers: { ...forwardedHeaders(call), ...(await credentials(kubeConfig)) },
        // A copy of the body: undici destroys a request body it is done with, and a tunnel stream carries the
        // response too.
        body: BODYLESS.has(call.method) ? null : call.body.pipe(new PassThrough()),
        dispatcher,
        signal,
      });
      answer.respond(response.statusCode, keptHeaders(response.headers));
      responded = true;
      await pipeline(response.body, answer.body);
    } catch (error) {
      if (signal.aborted) return;
      if (responded) {
        answer.body.destroy(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      log?.warn({ path: call.path, error: messageOf(error) }, 'proxied request failed');
      answer.respond(502, { 'content-type': 'application/json' });
      answer.body.end(JSON.stringify(apiServerUnreachable(who, error)));
    }
  };

  return { server: base, forward, close: () => dispatcher.close() };
}

/** The kubeconfig's Authorization header, read per request: a service account's token file is rotated. */
async function credentials(kubeConfig: KubeConfig): Promise<Record<string, string>> {
  const options: RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(options);
  return (options.headers ?? {}) as Record<string, string>;
}

/** The caller's headers minus what must not pass, plus who to impersonate. */
function forwardedHeaders(call: ApiCall): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(call.headers))
    if (value !== undefined && !DROPPED_REQUEST_HEADERS.test(name)) headers[name] = value;
  if (call.impersonate) {
    headers['impersonate-user'] = call.impersonate.user;
    if (call.impersonate.groups.length > 0) headers['impersonate-group'] = call.impersonate.groups;
  }
  return headers;
}

function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !DROPPED_RESPONSE_HEADERS.test(name)) kept[name] = value;
  return kept;
}

/** A Kubernetes Status, so kubectl prints the reason as it prints the API server's own errors. */
function apiServerUnreachable(who: string, error: unknown): object {
  const message = `${who} could not reach its Kubernetes API server: ${messageOf(error)}`;
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: 'ServiceUnavailable', code: 502 };
}
