/**
 * Helpers for this folder's tests against the local cluster: a namespace of one's own, a client that can be routed
 * through a TCP proxy whose connections the test cuts or freezes, a log sink, and polling.
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, KubeApiError, loadKubeConfig } from '../kube/client.ts';
import { createLogger, type Logger } from '../logger.ts';

/** A client for the cluster the test setup started (KUBECONFIG), optionally sent to another server URL. */
export function testClient(server?: string): KubeClient {
  const config = loadKubeConfig();
  if (!server) return new KubeClient(config);
  const current = config.getCurrentCluster()!;
  const routed = new KubeConfig();
  routed.loadFromOptions({
    clusters: config.clusters.map((cluster) => (cluster.name === current.name ? { ...cluster, server } : cluster)),
    users: config.users,
    contexts: config.contexts,
    currentContext: config.getCurrentContext(),
  });
  return new KubeClient(routed);
}

/** Creates `gantry-e2e-framework-<area>-<random>` and returns its name. */
export async function createNamespace(client: KubeClient, area: string): Promise<string> {
  const name = `gantry-e2e-framework-${area}-${randomBytes(3).toString('hex')}`;
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  return name;
}

export async function deleteNamespace(client: KubeClient, name: string): Promise<void> {
  await client.request('DELETE', `/api/v1/namespaces/${name}`).catch((error: unknown) => {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error;
  });
}

/** A namespaced CustomResourceDefinition of `group` serving `v1` without a schema (every field is kept). */
export function schemalessCrd(group: string, kind: string, plural: string): Record<string, unknown> & { metadata: { name: string } } {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

/** Creates or changes the ConfigMap `namespace/name` (server-side apply) with `data`. */
export async function applyConfigMap(client: KubeClient, namespace: string, name: string, data: Record<string, string>): Promise<void> {
  await client.request('PATCH', `/api/v1/namespaces/${namespace}/configmaps/${name}`, {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data },
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: 'gantry-e2e-framework', force: 'true' },
  });
}

export async function deleteConfigMap(client: KubeClient, namespace: string, name: string): Promise<void> {
  await client.request('DELETE', `/api/v1/namespaces/${namespace}/configmaps/${name}`);
}

/** Polls `check` every 20 ms until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A logger whose JSON lines the test can read (and print on failure). */
export function capturedLogger(level: 'debug' | 'info' = 'debug'): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ level, destination }), lines };
}

/**
 * A TCP proxy on 127.0.0.1 in front of the API server: TLS passes through untouched (the server certificate names
 * 127.0.0.1), and the test can cut every connection, freeze them (no byte passes, nothing closes: a dead peer), or
 * refuse new ones.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly upstream: { host: string; port: number };
  private readonly pairs = new Set<{ client: net.Socket; remote: net.Socket; frozen: boolean }>();
  private refusing = false;
  /** Connections accepted so far. */
  connections = 0;
  /** The first bytes each client sent: its TLS ClientHello, whose ALPN list is readable. */
  readonly clientHellos: Buffer[] = [];

  private constructor(server: net.Server, upstream: { host: string; port: number }) {
    this.server = server;
    this.upstream = upstream;
  }

  /** Starts a proxy to the API server of the test kubeconfig. */
  static async start(): Promise<TcpProxy> {
    const target = new URL(loadKubeConfig().getCurrentCluster()!.server);
    const server = net.createServer();
    const proxy = new TcpProxy(server, { host: target.hostname, port: Number(target.port) });
    server.on('connection', (client) => proxy.connect(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** Connections open right now (frozen ones included). */
  get open(): number {
    return this.pairs.size;
  }

  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Destroys every open connection (frozen ones too), as a crashed load balancer would. */
  cut(): void {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.remote.destroy();
    }
    this.pairs.clear();
  }

  /** Stops forwarding on every open connection; neither side learns anything, even when the other one closes. */
  freeze(): void {
    for (const pair of this.pairs) {
      pair.frozen = true;
      pair.client.unpipe();
      pair.remote.unpipe();
      pair.client.pause();
      pair.remote.pause();
    }
  }

  /** Lets frozen connections flow again, with whatever the peers sent meanwhile (a close included). */
  thaw(): void {
    for (const pair of this.pairs) {
      if (!pair.frozen) continue;
      pair.frozen = false;
      if (pair.client.destroyed || pair.remote.destroyed) {
        pair.client.destroy();
        pair.remote.destroy();
        this.pairs.delete(pair);
        continue;
      }
      pair.client.pipe(pair.remote);
      pair.remote.pipe(pair.client);
    }
  }

  /** While refusing, new connections are closed at once (the API server is unreachable). */
  refuse(refusing: boolean): void {
    this.refusing = refusing;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private connect(client: net.Socket): void {
    if (this.refusing) return void client.destroy();
    this.connections++;
    client.once('data', (chunk: Buffer) => this.clientHellos.push(chunk));
    const remote = net.connect(this.upstream.port, this.upstream.host);
    const pair = { client, remote, frozen: false };
    this.pairs.add(pair);
    const drop = () => {
      if (pair.frozen) return;
      this.pairs.delete(pair);
      client.destroy();
      remote.destroy();
    };
    client.on('error', drop).on('close', drop);
    remote.on('error', drop).on('close', drop);
    client.pipe(remote);
    remote.pipe(client);
  }
}
