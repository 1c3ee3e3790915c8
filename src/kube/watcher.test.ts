/**
 * The watcher against the local cluster: ConfigMaps in a namespace of its own, watched across all namespaces (as
 * the controller watches its resource), and through a TCP proxy whose connections the tests cut and freeze.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from './object.ts';
import { Watcher, objectKey, splitKey, type WatchedResource } from './watcher.ts';
import {
  applyConfigMap,
  capturedLogger,
  createNamespace,
  deleteConfigMap,
  deleteNamespace,
  schemalessCrd,
  TcpProxy,
  testClient,
  waitFor,
} from '../controller/test-support.ts';

const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps' };

interface Seen {
  key: string;
  data: Record<string, string> | undefined;
  at: number;
}

describe('Watcher', () => {
  const client = testClient();
  let namespace: string;
  const running: Array<{ stop(): Promise<unknown> }> = [];

  beforeAll(async () => {
    namespace = await createNamespace(client, 'watch');
  });
  afterEach(async () => {
    for (const item of running.splice(0)) await item.stop();
  });
  afterAll(async () => {
    await deleteNamespace(client, namespace);
  });

  /** A started watcher of every ConfigMap in the cluster, recording the changes in this test's namespace. */
  function watchConfigMaps(options: { server?: string; staleAfterMs?: number; resource?: WatchedResource } = {}) {
    const seen: Seen[] = [];
    const { log, lines } = capturedLogger();
    const watcher = new Watcher({
      client: testClient(options.server),
      resource: options.resource ?? CONFIGMAPS,
      log,
      staleAfterMs: options.staleAfterMs,
      onChange: (key, object) => {
        if (splitKey(key).namespace === namespace && splitKey(key).name !== 'kube-root-ca.crt')
          seen.push({ key, data: object?.data as Record<string, string> | undefined, at: Date.now() });
      },
    });
    watcher.start();
    running.push(watcher);
    return { watcher, seen, lines, last: (name: string) => seen.findLast((entry) => entry.key === `${namespace}/${name}`) };
  }

  it('lists what exists, then reports creates, updates and deletes as they happen', async () => {
    await applyConfigMap(client, namespace, 'before', { step: 'listed' });
    const { watcher, seen, last } = watchConfigMaps();
    await watcher.waitForSync();
    expect(watcher.synced).toBe(true);
    expect(seen).toEqual([expect.objectContaining({ key: `${namespace}/before`, data: { step: 'listed' } })]);
    const cached = watcher.cache.get(`${namespace}/before`) as KubeObject;
    expect(cached).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before', namespace } });
    expect(watcher.cache.size).toBeGreaterThan(1); // kube-root-ca.crt of every namespace: all namespaces are watched

    const latencies: number[] = [];
    for (const step of ['created', 'updated']) {
      const sent = Date.now();
      await applyConfigMap(client, namespace, 'live', { step });
      const entry = await waitFor(`${step} seen`, () => last('live')?.data?.step === step && last('live'));
      latencies.push(entry.at - sent);
    }
    const sent = Date.now();
    await deleteConfigMap(client, namespace, 'live');
    const deleted = await waitFor('delete seen', () => {
      const entry = last('live');
      return entry && entry.data === undefined && entry;
    });
    latencies.push(deleted.at - sent);
    expect(watcher.cache.has(`${namespace}/live`)).toBe(false);
    expect(seen.map((entry) => [entry.key.split('/')[1], entry.data?.step])).toEqual([
      ['before', 'listed'],
      ['live', 'created'],
      ['live', 'updated'],
      ['live', undefined],
    ]);
    console.log(`watch event latency from sending the API call (create, update, delete): ${latencies.join(', ')} ms`);
  });

  it('recovers from cut connections; a relist reports exactly what changed while the server was unreachable', async () => {
    const proxy = await TcpProxy.start();
    running.push({ stop: () => proxy.close() });
    for (const name of ['kept', 'removed', 'untouched']) await applyConfigMap(client, namespace, name, { step: '1' });
    const { watcher, seen, last, lines } = watchConfigMaps({ server: proxy.url });
    await watcher.waitForSync();

    // A cut stream ends like a closed one: the watch goes on from the last resourceVersion.
    proxy.cut();
    await applyConfigMap(client, namespace, 'kept', { step: '2' });
    await waitFor('a change after a cut', () => last('kept')?.data?.step === '2');

    // Unreachable: the watch and the list fail, and the watcher keeps relisting with backoff.
    proxy.refuse(true);
    proxy.cut();
    await applyConfigMap(client, namespace, 'kept', { step: '3' });
    await deleteConfigMap(client, namespace, 'removed');
    await waitFor('a failed relist', () => lines.some((line) => line.msg === 'list/watch failed; relisting after a delay'));
    expect(last('kept')?.data).toEqual({ step: '2' });
    proxy.refuse(false);
    await waitFor('the change made while unreachable', () => last('kept')?.data?.step === '3');
    await waitFor('the delete made while unreachable', () => last('removed') && last('removed')!.data === undefined);
    expect(watcher.cache.has(`${namespace}/removed`)).toBe(false);
    expect(lines.filter((line) => line.msg === 'listed').length).toBeGreaterThanOrEqual(2);
    // Once per change, whatever the reconnects; a relist reports disappearances first.
    expect(seen.map((entry) => `${entry.key.split('/')[1]}=${entry.data?.step ?? 'deleted'}`)).toEqual([
      'before=listed',
      'kept=1',
      'removed=1',
      'untouched=1',
      'kept=2',
      'removed=deleted',
      'kept=3',
    ]);
  });

  it('relists when the stream goes silent without closing (staleness watchdog)', async () => {
    const proxy = await TcpProxy.start();
    running.push({ stop: () => proxy.close() });
    // Longer than undici keeps an idle pooled connection (4 s): by the freeze only the watch is open.
    const { watcher, last, lines } = watchConfigMaps({ server: proxy.url, staleAfterMs: 5000 });
    await watcher.waitForSync();
    await applyConfigMap(client, namespace, 'frozen', { step: '1' });
    await waitFor('the live stream', () => last('frozen')?.data?.step === '1');
    await waitFor('only the watch connection open', () => proxy.open === 1);

    proxy.freeze();
    await applyConfigMap(client, namespace, 'frozen', { step: '2' });
    // 5 s of silence, then a relist delayed by 0.5–1.5 s; the wait ends long before the library's own timer (35 s).
    await waitFor('the change behind the frozen stream', () => last('frozen')?.data?.step === '2', 15_000);
    expect(lines.some((line) => line.msg === 'relisting' && String(line.reason).startsWith('no event or bookmark'))).toBe(true);
  });

  it('relists when the API server answers 410 Gone for an expired resourceVersion', async () => {
    // A re-created CRD gets a new watch cache that starts after every resourceVersion the watcher knew, so the
    // watcher's next watch (after its frozen connection delivers the end of the stream) is refused with 410 Expired.
    const group = `${namespace}.e2e.gantry.dev`;
    const crd = schemalessCrd(group, 'Widget', 'widgets');
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const widgets = `/apis/${group}/v1/namespaces/${namespace}/widgets`;
    const createCrd = async () => {
      await client.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd });
      await waitFor('the widgets resource', () =>
        client.request('GET', widgets).then(
          () => true,
          () => false,
        ),
      );
    };
    await createCrd();
    running.push({ stop: () => client.request('DELETE', crdPath).catch(() => undefined) });
    const proxy = await TcpProxy.start();
    running.push({ stop: () => proxy.close() });
    const { watcher, seen, lines } = watchConfigMaps({ server: proxy.url, resource: { group, version: 'v1', plural: 'widgets' } });
    await watcher.waitForSync();
    await client.request('POST', widgets, {
      body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'one' }, data: { step: '1' } },
    });
    await waitFor('the widget', () => seen.some((entry) => entry.key === `${namespace}/one`));

    proxy.freeze();
    await client.request('DELETE', crdPath);
    await waitFor('the CRD gone', () =>
      client.request('GET', crdPath).then(
        () => false,
        () => true,
      ),
    );
    await createCrd();
    proxy.thaw();
    await waitFor('the relist after 410', () => lines.some((line) => line.msg === 'relisting' && String(line.reason).includes('410')));
    await waitFor('the widget deleted with its CRD', () => seen.at(-1)?.key === `${namespace}/one` && seen.at(-1)?.data === undefined);
    expect(lines.some((line) => line.msg === 'list/watch failed; relisting after a delay')).toBe(false);
  });

  it('fails listed() as a one-off list would while its lists fail, and rejects those still waiting when stopped', async () => {
    const missing = { group: 'nothing.gantry.dev', version: 'v1', plural: 'things' };
    const { watcher } = watchConfigMaps({ resource: missing });
    await expect(watcher.listed()).rejects.toMatchObject({ status: 404 });
    // The error stays the answer until a list succeeds: this call does not wait through the retry's backoff.
    await expect(watcher.listed()).rejects.toMatchObject({ status: 404 });
    await watcher.stop();
    await expect(watcher.listed()).rejects.toMatchObject({ status: 404 });

    const { watcher: stopped } = watchConfigMaps({ resource: missing });
    // Rejected by the stop, or by a failed list before it: either way it does not wait on.
    const waiting = expect(stopped.listed()).rejects.toBeInstanceOf(Error);
    await stopped.stop();
    await waiting;
    const { watcher: listing } = watchConfigMaps();
    await expect(listing.listed()).resolves.toBeUndefined();
  });

  it('stops promptly, even in the middle of a watch', async () => {
    const { watcher } = watchConfigMaps();
    await watcher.waitForSync();
    // The watch would otherwise stay open for its 5–10 minute server timeout, far beyond this test's.
    await expect(watcher.stop()).resolves.toBeUndefined();
  });
});

describe('objectKey and splitKey', () => {
  it('use namespace/name, and the bare name for cluster-scoped objects', () => {
    expect(objectKey({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'a', name: 'b' } })).toBe('a/b');
    expect(objectKey({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } })).toBe('a');
    expect(splitKey('a/b')).toEqual({ namespace: 'a', name: 'b' });
    expect(splitKey('a')).toEqual({ namespace: '', name: 'a' });
  });
});
