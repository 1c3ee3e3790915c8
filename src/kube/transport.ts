/**
 * Kubernetes connections: one pooled HTTP/1.1 connection pool per kubeconfig, for every KubeClient.
 *
 * @kubernetes/client-node builds a new undici Agent for every request, and undici 8 negotiates HTTP/2 by default.
 * On Node 24, destroying an HTTP/2 client stream (any aborted request: a stopping controller, lost leadership, a
 * request timeout) can spin forever in Http2Session::SendPendingData, blocking the event loop while memory grows
 * until the process is killed (seen here as std::bad_alloc at 20 GB; nodejs/node#52952 reports the same loop). An
 * aborted HTTP/1.1 request just closes its connection. The pool also spares a TLS handshake per request.
 */
import type { AgentOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { Agent } from 'undici';

/** A KubeConfig whose requests (KubeClient's and the library's Watch) share one HTTP/1.1 connection pool. */
export class Http1KubeConfig extends KubeConfig {
  private pool: { material: TlsMaterial; agent: Agent } | undefined;

  /** A copy of `config` (clusters, users, contexts, current context). */
  static from(config: KubeConfig): Http1KubeConfig {
    const copy = new Http1KubeConfig();
    copy.loadFromOptions({
      clusters: config.clusters,
      users: config.users,
      contexts: config.contexts,
      currentContext: config.getCurrentContext(),
    });
    return copy;
  }

  /**
   * Authenticates as the library does, then sends the request through the pool instead of a new HTTP/2 agent
   * (except through a cluster's proxyUrl, which keeps the library's proxy agent).
   */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    if (!this.getCurrentCluster()?.proxyUrl) context.setDispatcher(await this.agent());
  }

  /** Closes the pool's connections; a request after this opens a new pool. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.agent.close();
  }

  /** The pool for the current TLS material; a new one when it changed (rotated client certificates). */
  private async agent(): Promise<Agent> {
    const tls: AgentOptions = {};
    await this.applyToHTTPSOptions(tls);
    const connect = {
      ca: tls.ca,
      cert: tls.cert,
      key: tls.key,
      pfx: tls.pfx,
      passphrase: tls.passphrase,
      rejectUnauthorized: tls.rejectUnauthorized,
      servername: tls.servername,
    };
    if (!this.pool || !sameMaterial(this.pool.material, connect)) {
      void this.pool?.agent.close();
      // One TLS context for every connection of the pool: made per connection, parsing the CA and key cost ~0.6 ms
      // of CPU each time, and a command's first lists open 16 connections at once.
      const { rejectUnauthorized, servername, ...credentials } = connect;
      const secureContext = createSecureContext(credentials);
      // keepAlive as the library sets it: 30 s, like client-go, below cloud load balancers' idle timeouts.
      this.pool = {
        material: connect,
        agent: new Agent({
          allowH2: false,
          connect: { secureContext, rejectUnauthorized, servername, keepAlive: true, keepAliveInitialDelay: 30_000 },
        }),
      };
    }
    return this.pool.agent;
  }
}

/** What a connection's TLS is made of: the CA, client credentials and how the server is checked. */
type TlsMaterial = Record<string, unknown>;

/**
 * Whether two sets of TLS material are the same, Buffers by content. Asked before every request, so it compares
 * in place: serialising the certificates to compare them cost ~0.25 ms of CPU per request.
 */
function sameMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => sameValue(a[key], b[key]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  return a === b;
}
