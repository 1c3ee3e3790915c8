/**
 * AlertDispatcher end to end: Alert resources and their Secrets in the real cluster, real HTTP posts to a server on
 * 127.0.0.1 that records them: generic and Slack payloads, severity and source matching, suspension, the retry,
 * the timeout, dropped repeats, and the Alert's Ready condition after failed and successful deliveries.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gantryCrds } from '../../scripts/generate-install.ts';
import { createLogger } from '../../src/logger.ts';
import { AlertDispatcher, type AlertEvent } from '../../src/gitops/alerts.ts';
import { Cluster } from '../../src/kube/cluster.ts';
import { toYaml } from '../../src/yaml.ts';
import { startHttpServer, type Route, type TestHttpServer } from '../support/http-server.ts';
import { KUBECONFIG, kubectl, kubectlJson } from '../support/cli.ts';
import { waitFor } from '../support/controller.ts';

const NS = `gantry-e2e-alerts-${randomBytes(3).toString('hex')}`;
const OTHER_NS = `${NS}-other`;
const TOKEN = 'alert-bearer-token';
const HMAC_KEY = 'alert-hmac-key';

/** Looked up per request, so a test can change a route's answer. */
const routes: Record<string, Route> = {
  '/generic': { body: 'ok' },
  '/slack': { body: 'ok' },
  '/suspended': { body: 'ok' },
  '/other': { body: 'ok' },
  '/cross': { body: 'ok' },
  '/flaky': { status: 500, body: 'try again' },
  '/rejects': { status: 400, body: 'bad payload' },
};
let receiver: TestHttpServer;
let silent: Server;
let silentUrl = '';
const logLines: string[] = [];
let dispatcher: AlertDispatcher;

const event = (overrides: Partial<AlertEvent> = {}): AlertEvent => ({
  deployment: { namespace: NS, name: 'shop', labels: { tier: 'web' } },
  severity: 'info',
  reason: 'ReconciliationSucceeded',
  message: 'deployed 2 objects',
  revision: 'main@sha1:4f2a9c1',
  summary: { newObjects: 1, changedObjects: 1, deletedObjects: 0 },
  ...overrides,
});

function alert(name: string, namespace: string, spec: Record<string, unknown>): string {
  return toYaml({ apiVersion: 'gitops.gantry.dev/v1beta1', kind: 'Alert', metadata: { name, namespace }, spec });
}

const requestsTo = (path: string) => receiver.received.filter((request) => request.path === path);

async function readyCondition(name: string): Promise<Record<string, string> | undefined> {
  const object = await kubectlJson<{ status?: { conditions?: Array<Record<string, string>> } }>([
    'get',
    'alerts.gitops.gantry.dev',
    name,
    '-n',
    NS,
  ]);
  return object.status?.conditions?.find((condition) => condition.type === 'Ready');
}

beforeAll(async () => {
  // The real CRDs from src/api, applied as the install does (never deleted: other tests and the controller use them).
  await kubectl(
    ['apply', '--server-side', '--force-conflicts', '-f', '-'],
    gantryCrds()
      .map((crd) => `---\n${toYaml(crd)}`)
      .join(''),
  );
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/alerts.gitops.gantry.dev']);
  receiver = await startHttpServer(routes);
  // Accepts connections and never answers: only the timeout ends a post there.
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/silent`;

  await kubectl(['create', 'namespace', NS]);
  await kubectl(['create', 'namespace', OTHER_NS]);
  const source = (extra: Record<string, unknown> = {}) => [{ kind: 'KluctlDeployment', name: '*', ...extra }];
  const manifests = [
    toYaml({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'generic-auth', namespace: NS },
      stringData: { token: TOKEN, hmacKey: HMAC_KEY },
    }),
    toYaml({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'slack-webhook', namespace: NS },
      stringData: { address: `${receiver.url}/slack` },
    }),
    alert('generic', NS, {
      type: 'generic',
      address: `${receiver.url}/generic`,
      secretRef: { name: 'generic-auth' },
      summary: 'cluster: e2e',
      eventSources: source(),
    }),
    alert('slack', NS, {
      type: 'slack',
      secretRef: { name: 'slack-webhook' },
      channel: '#deploys',
      eventSeverity: 'error',
      eventSources: source({ matchLabels: { tier: 'web' } }),
    }),
    alert('suspended', NS, { type: 'generic', address: `${receiver.url}/suspended`, suspend: true, eventSources: source() }),
    alert('other', NS, { type: 'generic', address: `${receiver.url}/other`, eventSources: [{ kind: 'KluctlDeployment', name: 'cart' }] }),
    alert('cross', OTHER_NS, {
      type: 'generic',
      address: `${receiver.url}/cross`,
      eventSources: [{ kind: 'KluctlDeployment', name: 'shop', namespace: NS }],
    }),
    alert('flaky', NS, { type: 'generic', address: `${receiver.url}/flaky`, eventSources: [{ kind: 'KluctlDeployment', name: 'flaky' }] }),
    alert('rejects', NS, {
      type: 'generic',
      address: `${receiver.url}/rejects`,
      eventSources: [{ kind: 'KluctlDeployment', name: 'rejected' }],
    }),
    alert('silent', NS, { type: 'generic', address: silentUrl, eventSources: [{ kind: 'KluctlDeployment', name: 'silent' }] }),
    alert('no-secret', NS, {
      type: 'generic',
      secretRef: { name: 'missing' },
      eventSources: [{ kind: 'KluctlDeployment', name: 'nosecret' }],
    }),
  ];
  await kubectl(['apply', '-f', '-'], manifests.map((manifest) => `---\n${manifest}`).join(''));
  const log = createLogger({ level: 'debug', destination: { write: (line: string) => void logLines.push(line) } });
  dispatcher = new AlertDispatcher(Cluster.connect({ kubeconfig: KUBECONFIG }), { log, timeoutMs: 1500, retryDelayMs: 100 });
});

afterAll(async () => {
  await dispatcher?.close();
  await kubectl(['delete', 'namespace', NS, OTHER_NS, '--ignore-not-found', '--wait=false']);
  await receiver?.close();
  silent?.closeAllConnections();
  await new Promise((resolve) => silent?.close(resolve));
});

describe('AlertDispatcher', { timeout: 60_000 }, () => {
  it('posts an info event as generic JSON with bearer token and HMAC signature, to matching Alerts only', async () => {
    await dispatcher.notify(event());
    const [generic, ...more] = requestsTo('/generic');
    expect(more).toEqual([]);
    expect(generic?.method).toBe('POST');
    expect(generic?.headers['content-type']).toBe('application/json');
    expect(generic?.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(generic?.headers['x-signature']).toBe(
      `sha256=${createHmac('sha256', HMAC_KEY)
        .update(generic?.body ?? '')
        .digest('hex')}`,
    );
    const payload = JSON.parse(generic?.body ?? '{}');
    expect(payload).toMatchObject({
      involvedObject: { apiVersion: 'gitops.gantry.dev/v1beta1', kind: 'KluctlDeployment', namespace: NS, name: 'shop' },
      severity: 'info',
      reason: 'ReconciliationSucceeded',
      message: 'deployed 2 objects',
      metadata: { revision: 'main@sha1:4f2a9c1', summary: 'cluster: e2e' },
      summary: { newObjects: 1, changedObjects: 1, deletedObjects: 0 },
      reportingController: 'gantry-controller',
    });
    expect(Date.parse(payload.timestamp)).not.toBeNaN();
    // Cross-namespace source naming this deployment: sent. Error-only Slack, suspended, other deployment: not.
    expect(requestsTo('/cross')).toHaveLength(1);
    expect(requestsTo('/slack')).toEqual([]);
    expect(requestsTo('/suspended')).toEqual([]);
    expect(requestsTo('/other')).toEqual([]);
    expect(await readyCondition('generic')).toMatchObject({ status: 'True', reason: 'Succeeded' });
  });

  it('posts an error event as a Slack message to the address from the Secret', async () => {
    await dispatcher.notify(event({ severity: 'error', reason: 'DeployFailed', message: 'apply of <Deployment/web> failed' }));
    const [slack, ...more] = requestsTo('/slack');
    expect(more).toEqual([]);
    expect(slack?.headers['authorization']).toBeUndefined();
    const payload = JSON.parse(slack?.body ?? '{}');
    expect(payload.channel).toBe('#deploys');
    expect(payload.text).toContain(`KluctlDeployment ${NS}/shop: DeployFailed`);
    expect(payload.attachments[0]).toMatchObject({
      color: 'danger',
      author_name: `KluctlDeployment ${NS}/shop`,
      title: 'DeployFailed',
      text: 'apply of &lt;Deployment/web&gt; failed',
      fields: [
        { title: 'Revision', value: 'main@sha1:4f2a9c1', short: true },
        { title: 'Changes', value: '1 new, 1 changed, 0 deleted', short: true },
      ],
    });
    expect(requestsTo('/generic')).toHaveLength(2);
  });

  it('does not send to a Slack Alert whose matchLabels the deployment lacks', async () => {
    const before = requestsTo('/slack').length;
    await dispatcher.notify(event({ severity: 'error', deployment: { namespace: NS, name: 'shop', labels: { tier: 'db' } } }));
    expect(requestsTo('/slack')).toHaveLength(before);
  });

  it('retries a 5xx once, then records the failure in the Ready condition; a later success clears it', async () => {
    await dispatcher.notify(event({ deployment: { namespace: NS, name: 'flaky' } }));
    expect(requestsTo('/flaky')).toHaveLength(2);
    expect(await readyCondition('flaky')).toMatchObject({
      status: 'False',
      reason: 'SendFailed',
      message: 'the receiver answered 500: try again (after one retry)',
    });
    expect(logLines.some((line) => line.includes('sending an alert failed') && line.includes('"alert":"' + NS + '/flaky"'))).toBe(true);

    routes['/flaky'] = { body: 'ok' };
    await dispatcher.notify(event({ deployment: { namespace: NS, name: 'flaky' }, revision: 'main@sha1:5e6f7a8' }));
    expect(requestsTo('/flaky')).toHaveLength(3);
    expect(await readyCondition('flaky')).toMatchObject({ status: 'True', reason: 'Succeeded' });
  });

  it('does not retry a 4xx', async () => {
    await dispatcher.notify(event({ deployment: { namespace: NS, name: 'rejected' } }));
    expect(requestsTo('/rejects')).toHaveLength(1);
    expect(await readyCondition('rejects')).toMatchObject({ status: 'False', message: 'the receiver answered 400: bad payload' });
  });

  it('gives up on a receiver that never answers after the timeout and one retry, without throwing', async () => {
    const started = Date.now();
    await expect(dispatcher.notify(event({ deployment: { namespace: NS, name: 'silent' } }))).resolves.toBeUndefined();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(2 * 1500);
    expect(elapsed).toBeLessThan(10_000);
    expect(await readyCondition('silent')).toMatchObject({ status: 'False', message: 'no answer within 1500ms (after one retry)' });
  });

  it('drops an event equal to one sent within the repeat interval (a failure retried with backoff)', async () => {
    const failure = event({
      deployment: { namespace: NS, name: 'cart' },
      severity: 'error',
      reason: 'PrepareFailed',
      message: 'git repository x could not be fetched',
    });
    for (let retry = 0; retry < 3; retry++) await dispatcher.notify(failure);
    expect(requestsTo('/other')).toHaveLength(1);
    await dispatcher.notify({ ...failure, message: 'target prod not found' });
    expect(requestsTo('/other')).toHaveLength(2);
    const unlimited = new AlertDispatcher(Cluster.connect({ kubeconfig: KUBECONFIG }), {
      log: createLogger({ level: 'error' }),
      repeatIntervalMs: 0,
    });
    await unlimited.notify(failure);
    await unlimited.notify(failure);
    await unlimited.close();
    expect(requestsTo('/other')).toHaveLength(4);
  });

  it('records a missing Secret in the Ready condition', async () => {
    await dispatcher.notify(event({ deployment: { namespace: NS, name: 'nosecret' } }));
    expect(await readyCondition('no-secret')).toMatchObject({
      status: 'False',
      reason: 'SendFailed',
      message: `Secret ${NS}/missing not found`,
    });
  });

  it('sends to an Alert made after its first event, and no longer to one deleted since', async () => {
    routes['/late'] = { body: 'ok' };
    const late = alert('late', NS, {
      type: 'generic',
      address: `${receiver.url}/late`,
      eventSources: [{ kind: 'KluctlDeployment', name: 'late' }],
    });
    await kubectl(['apply', '-f', '-'], late);
    // The dispatcher learns of the Alert from its watch; each attempt is a new event (equal ones are dropped as repeats).
    let attempt = 0;
    await waitFor(
      async () => {
        await dispatcher.notify(event({ deployment: { namespace: NS, name: 'late' }, message: `attempt ${++attempt}` }));
        return requestsTo('/late').length > 0;
      },
      30_000,
      () => 'a post to the Alert made after the first event',
    );
    expect(requestsTo('/late')).toHaveLength(1);

    await kubectl(['delete', 'alerts.gitops.gantry.dev', 'late', '-n', NS, '--wait=true']);
    const sentBefore = requestsTo('/late').length;
    await waitFor(
      async () => {
        await dispatcher.notify(event({ deployment: { namespace: NS, name: 'late' }, message: `attempt ${++attempt}` }));
        return requestsTo('/late').length === sentBefore;
      },
      30_000,
      () => 'no more posts to the deleted Alert',
    );
  });
});
