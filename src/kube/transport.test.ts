/**
 * KubeClient's transport against the local cluster, seen through a TCP proxy: the TLS ClientHello
 * tells which protocols a client offers (ALPN), and the proxy counts connections.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Watch } from '@kubernetes/client-node';
import { TcpProxy, testClient, waitFor } from '../controller/test-support.ts';
import { Http1KubeConfig } from './transport.ts';

/** The protocols a ClientHello offers by ALPN (`h2`, `http/1.1`), found by their length-prefixed names. */
function offers(hello: Buffer): string[] {
  return ['h2', 'http/1.1'].filter((protocol) => hello.includes(Buffer.concat([Buffer.from([protocol.length]), Buffer.from(protocol)])));
}

describe('Http1KubeConfig', () => {
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('sends every KubeClient request over pooled HTTP/1.1 connections (the library alone offers HTTP/2, one connection per request)', async () => {
    proxy = await TcpProxy.start();
    const client = testClient(proxy.url);
    expect(client.config).toBeInstanceOf(Http1KubeConfig);
    for (let index = 0; index < 5; index++) await client.request('GET', '/version');
    // undici frees a connection a tick after its response ended, so back-to-back requests may open a second one.
    expect(proxy.connections).toBeLessThanOrEqual(2);
    expect(proxy.clientHellos.map(offers)).toEqual(proxy.clientHellos.map(() => ['http/1.1']));
  });

  it('keeps its connections while the TLS material is the same, and opens new ones when it changes (rotated credentials)', async () => {
    proxy = await TcpProxy.start();
    const client = testClient(proxy.url);
    // A pause between requests lets undici free each connection first, so every reuse is certain.
    const get = async () => (await client.request('GET', '/version'), await new Promise((resolve) => setTimeout(resolve, 20)));
    for (let index = 0; index < 3; index++) await get();
    expect(proxy.connections).toBe(1);
    const config = client.config;
    const current = config.getCurrentCluster()!;
    config.loadFromOptions({
      clusters: config.clusters.map((cluster) => (cluster.name === current.name ? { ...cluster, skipTLSVerify: true } : cluster)),
      users: config.users,
      contexts: config.contexts,
      currentContext: config.getCurrentContext(),
    });
    for (let index = 0; index < 3; index++) await get();
    expect(proxy.connections).toBe(2);
  });

  it("serves the library's Watch too, and survives aborted requests", async () => {
    proxy = await TcpProxy.start();
    const client = testClient(proxy.url);
    const events: string[] = [];
    const watch = await new Watch(client.config).watch(
      '/api/v1/namespaces/default/configmaps',
      { allowWatchBookmarks: true },
      (type) => events.push(type),
      () => undefined,
    );
    await waitFor('the first watch event', () => events.includes('ADDED'));
    watch.abort();
    await expect(client.request('GET', '/api/v1/namespaces', { signal: AbortSignal.timeout(1) })).rejects.toThrow();
    expect(await client.request<{ gitVersion: string }>('GET', '/version')).toMatchObject({ gitVersion: expect.stringMatching(/^v1\./) });
    expect(proxy.clientHellos.every((hello) => offers(hello).join() === 'http/1.1')).toBe(true);
  });
});
