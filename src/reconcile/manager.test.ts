/**
 * The manager end to end against the local cluster, with a toy reconciler over the ConfigMaps of a namespace of
 * the test's own: it writes the annotation `e2e.gantry.dev/reconciled` (and who reconciled), and its behaviour
 * comes from the ConfigMap's data: `sleep` (ms, abortable), `requeue` (ms), `fail` (throw), `value`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import { runController, type ControllerHandle, type ControllerOptions, type Reconciler } from './manager.ts';
import {
  applyConfigMap,
  capturedLogger,
  createNamespace,
  deleteConfigMap,
  deleteNamespace,
  TcpProxy,
  testClient,
  waitFor,
} from '../controller/test-support.ts';
import { splitKey } from '../kube/watcher.ts';

const ANNOTATION = 'e2e.gantry.dev/reconciled';
const BY = 'e2e.gantry.dev/reconciled-by';

interface Call {
  key: string;
  object: KubeObject | undefined;
  start: number;
  end?: number;
  aborted?: boolean;
}

describe('runController', () => {
  const client = testClient();
  let namespace: string;
  const handles: ControllerHandle[] = [];

  beforeAll(async () => {
    namespace = await createNamespace(client, 'manager');
  });
  afterEach(async () => {
    for (const handle of handles.splice(0)) await handle.stop();
  });
  afterAll(async () => {
    await deleteNamespace(client, namespace);
  });

  /** The toy reconciler; `who` names the replica in the annotation it writes. */
  function toyReconciler(who: string, calls: Call[]): Reconciler {
    return async (key, object, signal) => {
      const call: Call = { key, object, start: Date.now() };
      calls.push(call);
      try {
        const data = object?.data as Record<string, string> | undefined;
        if (!object || !data?.value) return;
        if (data.sleep) await abortableSleep(Number(data.sleep), signal);
        if (data.fail) throw new Error(`toy failure of ${key}`);
        await client.request('PATCH', `/api/v1/namespaces/${namespace}/configmaps/${splitKey(key).name}`, {
          body: { metadata: { annotations: { [ANNOTATION]: data.value, [BY]: who } } },
          contentType: 'application/merge-patch+json',
          signal,
        });
        return data.requeue ? { requeueAfterMs: Number(data.requeue) } : undefined;
      } catch (error) {
        call.aborted = signal.aborted;
        throw error;
      } finally {
        call.end = Date.now();
      }
    };
  }

  async function start(overrides: Partial<ControllerOptions> & { who?: string } = {}) {
    const calls: Call[] = [];
    const { log, lines } = capturedLogger();
    const handle = await runController({
      cluster: Cluster.connect(),
      resource: { group: '', version: 'v1', plural: 'configmaps' },
      namespace,
      reconcile: toyReconciler(overrides.who ?? 'single', calls),
      workers: 2,
      server: { host: '127.0.0.1', port: 0 },
      logger: log,
      errorBackoff: { baseMs: 200, maxMs: 400 },
      ...overrides,
    });
    handles.push(handle);
    const get = (path: string) =>
      fetch(`http://127.0.0.1:${handle.port}${path}`).then(async (response) => ({ status: response.status, body: await response.text() }));
    return { handle, calls, lines, get, callsOf: (name: string) => calls.filter((call) => call.key === `${namespace}/${name}`) };
  }

  const annotations = async (name: string) =>
    ((await client.request<KubeObject>('GET', `/api/v1/namespaces/${namespace}/configmaps/${name}`)).metadata.annotations ?? {}) as Record<
      string,
      string
    >;

  it('reconciles every change, concurrently across keys, honouring requeueAfter, and serves health and metrics', async () => {
    await applyConfigMap(client, namespace, 'existing', { value: 'v1' });
    const { handle, calls, callsOf, get, lines } = await start();
    await handle.waitForSync();
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok' });
    expect(await get('/readyz')).toEqual({ status: 200, body: 'ok' });
    await waitFor('the existing object reconciled', async () => (await annotations('existing'))[ANNOTATION] === 'v1');

    // A slow key occupies one worker; the other worker gets through the rest meanwhile.
    await applyConfigMap(client, namespace, 'slow', { value: 's', sleep: '15000' });
    await waitFor('the slow reconcile running', () => callsOf('slow').length === 1);
    for (const name of ['fast-1', 'fast-2', 'fast-3']) await applyConfigMap(client, namespace, name, { value: name });
    for (const name of ['fast-1', 'fast-2', 'fast-3'])
      await waitFor(`${name} reconciled`, async () => (await annotations(name))[ANNOTATION] === name);
    expect(callsOf('slow')[0]!.end).toBeUndefined();

    // A change is reconciled again; the reconciler's own no-op patch triggers nothing further.
    await applyConfigMap(client, namespace, 'fast-1', { value: 'changed' });
    await waitFor('the change reconciled', async () => (await annotations('fast-1'))[ANNOTATION] === 'changed');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const fast1Calls = callsOf('fast-1').length;
    expect(fast1Calls).toBeGreaterThanOrEqual(2);
    expect(fast1Calls).toBeLessThanOrEqual(4); // two changes, plus one event per annotation written

    // requeueAfter: reconciled again after the delay, no sooner.
    await applyConfigMap(client, namespace, 'periodic', { value: 'p', requeue: '700' });
    await waitFor('three periodic reconciles', () => callsOf('periodic').length >= 4, 10_000);
    const starts = callsOf('periodic').map((call) => call.start);
    const gaps = starts.slice(2).map((start, index) => start - starts[index + 1]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(690);

    // A reconciler that throws is retried with the bounded backoff (200 ms, 400 ms, 400 ms, ...).
    await applyConfigMap(client, namespace, 'broken', { value: 'b', fail: 'yes' });
    await waitFor('retries of the failing key', () => callsOf('broken').length >= 4, 10_000);
    const failing = callsOf('broken').map((call) => call.start);
    expect(failing[2]! - failing[1]!).toBeGreaterThanOrEqual(390);
    expect(
      lines.some(
        (line) => line.msg === 'reconcile failed; retrying with backoff' && line.name === 'broken' && typeof line.reconcileID === 'string',
      ),
    ).toBe(true);

    const metrics = (await get('/metrics')).body;
    expect(metrics).toMatch(
      new RegExp(`gotk_reconcile_duration_seconds_count\\{kind="ConfigMap",name="fast-1",namespace="${namespace}"\\} [2-9]`),
    );
    expect(metrics).toMatch(/controller_runtime_reconcile_total\{controller="configmaps",result="requeue_after"\} [3-9]/);
    expect(metrics).toMatch(/controller_runtime_reconcile_errors_total\{controller="configmaps"\} [3-9]/);
    expect(metrics).toMatch(new RegExp(`configmaps_reconcile_failures_total\\{namespace="${namespace}",name="broken"\\} [3-9]`));
    expect(metrics).toMatch(/controller_runtime_max_concurrent_reconciles\{controller="configmaps"\} 2/);
    expect(metrics).toMatch(/workqueue_depth\{name="configmaps"\} \d/);
    expect(metrics).toMatch(/process_resident_memory_bytes \d+/);
    expect(metrics).toMatch(/nodejs_eventloop_lag_seconds \d/);

    // A delete is reconciled with no object, and the object's series disappear.
    await deleteConfigMap(client, namespace, 'fast-2');
    await waitFor('the delete reconciled', () => callsOf('fast-2').some((call) => call.object === undefined && call.end !== undefined));
    expect((await get('/metrics')).body).not.toContain(`name="fast-2"`);
    await deleteConfigMap(client, namespace, 'broken');

    // Stopping aborts the running slow reconcile (a new one started by the change) and waits for it.
    await applyConfigMap(client, namespace, 'slow', { value: 's2', sleep: '60000' });
    await waitFor('the second slow reconcile running', () => callsOf('slow').length === 2, 30_000);
    // It sleeps for a minute unless aborted: stop() returning at all shows the abort.
    await handle.stop();
    expect(callsOf('slow')[1]).toMatchObject({ aborted: true });
    expect(calls.every((call) => call.end !== undefined)).toBe(true);
    await expect(get('/healthz')).rejects.toThrow();
  });

  it('is alive but not ready until the watch has listed its objects', async () => {
    const proxy = await TcpProxy.start();
    try {
      const cluster = new Cluster(testClient(proxy.url));
      await cluster.discovery.resources();
      proxy.refuse(true);
      proxy.cut();
      const { handle, get } = await start({ cluster });
      expect(await get('/healthz')).toEqual({ status: 200, body: 'ok' });
      expect(await get('/readyz')).toEqual({ status: 503, body: 'not ready: watch configmaps/v1' });
      proxy.refuse(false);
      await handle.waitForSync();
      expect((await get('/readyz')).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('runs workers only on the leader; the standby takes over every object when the leader stops', async () => {
    await applyConfigMap(client, namespace, 'elected', { value: 'e' });
    const leaderElection = { namespace, name: 'toy-controller', leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
    const a = await start({ who: 'a', leaderElection: { ...leaderElection, identity: 'a' } });
    const b = await start({ who: 'b', leaderElection: { ...leaderElection, identity: 'b' } });
    const [leader, standby] = await waitFor('a leader', () => (a.handle.isLeader() ? [a, b] : b.handle.isLeader() ? [b, a] : undefined));
    const leaderName = leader === a ? 'a' : 'b';
    await waitFor('the leader reconciled', async () => (await annotations('elected'))[BY] === leaderName);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(standby.handle.isLeader()).toBe(false);
    expect(standby.calls).toHaveLength(0);
    expect((await standby.get('/readyz')).status).toBe(200);
    expect(standby.handle.cache.has(`${namespace}/elected`)).toBe(true);
    expect((await leader.get('/metrics')).body).toContain(`leader_election_master_status{name="${namespace}/toy-controller"} 1`);
    expect((await standby.get('/metrics')).body).toContain(`leader_election_master_status{name="${namespace}/toy-controller"} 0`);

    await leader.handle.stop();
    await waitFor('the standby leading', () => standby.handle.isLeader(), 5000);
    const standbyName = leaderName === 'a' ? 'b' : 'a';
    await waitFor('every object reconciled by the new leader', async () => (await annotations('elected'))[BY] === standbyName);
    await applyConfigMap(client, namespace, 'after-failover', { value: 'f' });
    await waitFor('a new object reconciled by the new leader', async () => (await annotations('after-failover'))[BY] === standbyName);
  });

  it('enqueues keys from routes added to the server (as a webhook receiver does)', async () => {
    await applyConfigMap(client, namespace, 'hooked', { value: 'h' });
    const { handle, callsOf } = await start({
      // The reconciler's own annotation patch then enqueues nothing: every further reconcile is the hook's.
      updateFilter: (object, previous) => JSON.stringify(object['data']) !== JSON.stringify(previous['data']),
      server: {
        host: '127.0.0.1',
        port: 0,
        routes: (app, controller) => {
          app.post<{ Params: { name: string } }>('/hook/:name', async (request) => {
            controller.enqueue(`${namespace}/${request.params.name}`);
            return { queued: request.params.name };
          });
        },
      },
    });
    await waitFor('the first reconcile done', () => callsOf('hooked')[0]?.end !== undefined);
    const response = await fetch(`http://127.0.0.1:${handle.port}/hook/hooked`, { method: 'POST' });
    expect(await response.json()).toEqual({ queued: 'hooked' });
    await waitFor('the reconcile the hook asked for', () => callsOf('hooked').length === 2);
  });

  it("skips the updates its updateFilter rejects (the reconciler's own writes) but not creations", async () => {
    const { handle, callsOf } = await start({
      updateFilter: (object, previous) => JSON.stringify(object['data']) !== JSON.stringify(previous['data']),
    });
    await handle.waitForSync();
    await applyConfigMap(client, namespace, 'filtered', { value: 'one' });
    await waitFor('the creation reconciled', async () => (await annotations('filtered'))[ANNOTATION] === 'one');
    // The reconciler's annotation patch is an update with unchanged data: no second reconcile.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(callsOf('filtered')).toHaveLength(1);
    await applyConfigMap(client, namespace, 'filtered', { value: 'two' });
    await waitFor('the data change reconciled', async () => (await annotations('filtered'))[ANNOTATION] === 'two');
    expect(callsOf('filtered')).toHaveLength(2);
  });

  it('refuses a resource the cluster does not serve', async () => {
    await expect(start({ resource: { group: 'nothing.gantry.dev', version: 'v1', plural: 'nothings' } })).rejects.toThrow(
      'the cluster serves no nothings.nothing.gantry.dev/v1 (is its CustomResourceDefinition installed?)',
    );
  });
});

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}
