/**
 * The clusters of a long-running role (controller, agent, server), one per kubeconfig context: a Cluster is keyed by
 * what makes its connection (server, certificate authority, credentials, impersonation), so every reconcile of the
 * deployments that share a context shares one client, connection pool and discovery cache, instead of building them
 * per reconcile. Every context reaching the same API server shares one throttle (client-go's QPS and burst), so the
 * readiness polls of many deployments stay within one budget. The owner closes the pool.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { Cluster } from './cluster.ts';
import { KubeClient, requestThrottle, selectContext, type RequestThrottle } from './client.ts';
import { Http1KubeConfig } from './transport.ts';

export interface ClusterPoolOptions {
  /** Average requests a second to one API server, and how many may go at once (client-go's QPS and Burst). */
  qps: number;
  burst: number;
  /** Limit of one request with its retries, in ms (default: KubeClient's). */
  requestTimeoutMs?: number;
  /**
   * Keep a watched cache of the objects carrying this label key in each cluster (Cluster.labelled), for a
   * long-running role; a one-shot command lists instead.
   */
  watchLabel?: string | undefined;
}

interface Entry {
  cluster: Cluster;
  lastUsed: number;
}

/**
 * Clusters by connection: `get` returns the one Cluster of a kubeconfig context's server and credentials, made on
 * first use; callers must not close it, and get it again for each piece of work rather than keep it: sweep() closes
 * those nobody got for `maxIdleMs`. close() closes all of them (the owner's job, once, at shutdown).
 */
export class ClusterPool {
  private readonly options: ClusterPoolOptions;
  private readonly entries = new Map<string, Entry>();
  private readonly throttles = new Map<string, RequestThrottle>();

  /** @throws Error when qps or burst is not positive. */
  constructor(options: ClusterPoolOptions) {
    requestThrottle(options);
    this.options = options;
  }

  /**
   * The cluster `config` reaches through `context` (default: its current context), created on first use.
   * @throws Error naming the known contexts when `config` has no such context, or no cluster or user for it.
   */
  get(config: KubeConfig, context?: string): Cluster {
    const own = Http1KubeConfig.from(config);
    if (context) selectContext(own, context);
    const server = own.getCurrentCluster();
    const user = own.getCurrentUser();
    if (!server || !user) throw new Error(`kubeconfig context '${own.getCurrentContext()}' has no cluster or user`);
    // Names are the kubeconfig's own labels: two kubeconfigs naming the same server and credentials differently share.
    const { name: _cluster, ...connection } = server;
    const { name: _user, ...credentials } = user;
    const key = createHash('sha256').update(JSON.stringify({ connection, credentials })).digest('hex');
    let entry = this.entries.get(key);
    if (!entry) {
      const client = new KubeClient(own, { throttle: this.throttleFor(server.server), requestTimeoutMs: this.options.requestTimeoutMs });
      entry = { cluster: new Cluster(client, { watchLabel: this.options.watchLabel }), lastUsed: 0 };
      this.entries.set(key, entry);
    }
    entry.lastUsed = Date.now();
    return entry.cluster;
  }

  /** How many clusters are open. */
  get size(): number {
    return this.entries.size;
  }

  /** How many times the pool's clusters read their discovery, all together. */
  get discoveryLoads(): number {
    let loads = 0;
    for (const { cluster } of this.entries.values()) loads += cluster.discovery.loads;
    return loads;
  }

  /**
   * Closes the clusters nobody asked for in `maxIdleMs` (a kubeconfig Secret that was rotated or deleted).
   * @returns how many were closed.
   */
  async sweep(maxIdleMs: number): Promise<number> {
    const idle = [...this.entries].filter(([, entry]) => Date.now() - entry.lastUsed > maxIdleMs);
    for (const [key] of idle) this.entries.delete(key);
    await Promise.all(idle.map(([, entry]) => entry.cluster.close()));
    return idle.length;
  }

  /** Closes every cluster. */
  async close(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => entry.cluster.close()));
  }

  private throttleFor(server: string): RequestThrottle {
    let throttle = this.throttles.get(server);
    if (!throttle) {
      throttle = requestThrottle(this.options);
      this.throttles.set(server, throttle);
    }
    return throttle;
  }
}
