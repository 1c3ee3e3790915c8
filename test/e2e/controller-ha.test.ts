/**
 * The real `gantry controller run` process in two situations beyond a single replica's reconcile loop:
 *
 * - Leader election with two replicas (`--leader-elect --leader-election-namespace <ns> --namespace <ns>`): exactly
 *   one holds the coordination.k8s.io/v1 Lease `gantry-controller` and reports `leader_election_master_status` 1
 *   (the other 0); only the leader reconciles (the standby logs no reconcile at all, and a push announced to the
 *   standby's webhook is handed to the leader through the request annotation); after SIGTERM the leader releases
 *   the Lease, the standby takes it over (leaseTransitions 1) and reconciles changed and newly created
 *   KluctlDeployments. The handover time (SIGTERM to the new holder's acquireTime) is measured and bounded.
 * - Alerts sent by the controller itself: Alert resources (gitops.gantry.dev/v1beta1) pointing at an HTTP receiver in
 *   this process get a generic JSON event (with the Secret's bearer token and HMAC signature) for a deployment that
 *   created, changed and pruned objects, nothing for a reconcile that changed nothing, and generic and Slack error
 *   events for a broken git source and a missing target; an error-only Alert and an Alert naming one deployment
 *   receive only what they watch; the Alerts' Ready condition records the delivery.
 *
 * Each part has its own namespace (random suffix), git repositories (file://) and controller processes.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  configMapProject,
  configMapValue,
  getDeployment,
  installCrds,
  kluctlDeployment,
  readyOf,
  reconcileNow,
  startController,
  waitFor,
  waitReady,
  WEBHOOK_SECRET,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startHttpServer, type ReceivedRequest, type TestHttpServer } from '../support/http-server.ts';

const API = 'gitops.gantry.dev/v1beta1';
const KD = 'kluctldeployments.gitops.gantry.dev';
const LEASE = 'gantry-controller';
const suffix = randomBytes(3).toString('hex');

/**
 * Deletes KluctlDeployments and waits for the controller's finalizer (which deletes their objects); when no
 * controller removes it in time, the finalizer is dropped so the namespace can go.
 */
async function deleteDeployments(namespace: string, names: string[]): Promise<void> {
  for (const name of names) {
    try {
      await kubectl(['delete', KD, name, '-n', namespace, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    } catch {
      await kubectl(['patch', KD, name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);
    }
  }
}

interface LogLine {
  level: string;
  msg: string;
  name?: string;
  namespace?: string;
  reconcileID?: string;
  identity?: string;
  transitions?: number;
  [field: string]: unknown;
}

/** The controller's JSON log lines (anything else it printed is skipped). */
async function logLines(controller: RunningController): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for (const line of (await controller.log()).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // a partly written last line
    }
  }
  return lines;
}

/** Lines logged inside a reconcile (they carry a reconcileID), of one deployment or of any. */
async function reconcileLines(controller: RunningController, namespace: string, name?: string): Promise<LogLine[]> {
  return (await logLines(controller)).filter(
    (line) => line.reconcileID !== undefined && line.namespace === namespace && (name === undefined || line.name === name),
  );
}

interface Lease {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

async function getLease(namespace: string): Promise<Lease | undefined> {
  return kubectlJson<Lease>(['get', 'leases.coordination.k8s.io', LEASE, '-n', namespace]).catch(() => undefined);
}

/** The value of `leader_election_master_status` for the Lease, from the controller's /metrics. */
async function leaderGauge(controller: RunningController, namespace: string): Promise<number | undefined> {
  const text = await (await fetch(controller.metricsUrl)).text();
  const match = new RegExp(`^leader_election_master_status\\{name="${namespace}/${LEASE}"\\} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

/** Posts a GitHub push event for `url` to a controller's webhook receiver, signed with the e2e secret. */
async function announcePush(controller: RunningController, url: string): Promise<Response> {
  const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: url, html_url: url } });
  const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
  return fetch(controller.webhookUrl, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
  });
}

beforeAll(async () => {
  await installCrds();
});

describe('gantry controller run with leader election (two replicas)', { timeout: 300_000 }, () => {
  const NS = `gantry-e2e-ha-${suffix}`;
  const replicas: RunningController[] = [];
  const repos: TestRepo[] = [];
  let leader: RunningController;
  let standby: RunningController;
  let leaderIdentity = '';
  let firstRepo: TestRepo;

  beforeAll(async () => {
    await kubectl(['create', 'namespace', NS]);
    const args = ['--leader-elect', '--leader-election-namespace', NS, '--namespace', NS];
    // Started together: either may win the election.
    replicas.push(...(await Promise.all([startController(args), startController(args)])));
    firstRepo = await createRepo(configMapProject(NS, `e2e-ha-first-${suffix}`, { first: 'one' }));
    repos.push(firstRepo);
  });

  afterAll(async () => {
    // While a replica still leads, so the finalizer deletes the deployed ConfigMaps.
    await deleteDeployments(NS, ['first', 'second']);
    for (const replica of replicas) await replica.stop();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    for (const repo of repos) await repo.remove();
  });

  it('elects exactly one replica: it holds the Lease, says so in its log and its leader gauge', async () => {
    const lease = await waitFor(
      async () => {
        const current = await getLease(NS);
        return current?.spec.holderIdentity ? current : undefined;
      },
      60_000,
      async () =>
        `a holder of Lease ${NS}/${LEASE}\n${(await replicas[0]!.log()).slice(-2000)}\n${(await replicas[1]!.log()).slice(-2000)}`,
    );
    leaderIdentity = lease.spec.holderIdentity!;
    expect(leaderIdentity).toMatch(/^.+_[0-9a-f-]{36}$/);
    expect(lease.spec.leaseDurationSeconds).toBe(15);
    expect(lease.spec.leaseTransitions).toBe(0);

    const electedLines = async () => {
      const elected = await Promise.all(
        replicas.map(async (replica) => (await logLines(replica)).filter((line) => line.msg === 'became leader')),
      );
      return elected.flatMap((lines, index) => lines.map((line) => ({ index, identity: line.identity })));
    };
    await waitFor(
      async () => (await electedLines()).length > 0,
      10_000,
      () => "a replica logging 'became leader'",
    );
    const leaders = await electedLines();
    expect(leaders).toHaveLength(1);
    expect(leaders[0]!.identity).toBe(leaderIdentity);
    leader = replicas[leaders[0]!.index]!;
    standby = replicas[1 - leaders[0]!.index]!;

    // The leader renews (every 2 s): the holder stays the same and renewTime moves on.
    const renewed = await waitFor(
      async () => {
        const current = await getLease(NS);
        return current && Date.parse(current.spec.renewTime!) > Date.parse(lease.spec.renewTime!) ? current : undefined;
      },
      10_000,
      () => 'the leader renewing its Lease',
    );
    expect(renewed.spec.holderIdentity).toBe(leaderIdentity);

    expect(await leaderGauge(leader, NS)).toBe(1);
    expect(await leaderGauge(standby, NS)).toBe(0);
    // The standby is ready all the same (its watches are synced), so a rollout does not wait for it.
    expect((await fetch(`${standby.healthUrl}/readyz`)).status).toBe(200);
  });

  it('reconciles only on the leader', async () => {
    await applyObject(kluctlDeployment(NS, 'first', firstRepo.url));
    const deployment = await waitReady(NS, 'first', () => leader.log());
    expect(deployment.status.lastDeployResult.errors).toEqual([]);
    expect(await configMapValue(NS, 'first')).toBe('one');

    const onLeader = await reconcileLines(leader, NS, 'first');
    expect(onLeader.map((line) => line.msg)).toContain('Performing deploy');
    expect(await reconcileLines(standby, NS)).toEqual([]);
  });

  it('hands a push announced to the standby over to the leader', async () => {
    const commit = await firstRepo.commit(configMapProject(NS, `e2e-ha-first-${suffix}`, { first: 'two' }), 'first = two');
    const response = await announcePush(standby, firstRepo.url);
    expect(response.status).toBe(202);
    // The standby cannot reconcile: it asks through the object, and the leader answers the request.
    const deployment = await waitFor(
      async () => {
        const current = await getDeployment(NS, 'first');
        return current.status?.lastDeployResult?.revision === commit && current.status?.reconcileRequestResult?.endTime
          ? current
          : undefined;
      },
      60_000,
      async () => `first deploying ${commit}\n${(await leader.log()).slice(-3000)}\n--- standby ---\n${(await standby.log()).slice(-2000)}`,
    );
    expect(deployment.metadata.annotations?.['kluctl.io/request-reconcile']).toBeUndefined();
    expect(await configMapValue(NS, 'first')).toBe('two');
    expect(await reconcileLines(standby, NS)).toEqual([]);
  });

  it('moves the Lease to the standby on SIGTERM of the leader, which then reconciles', async () => {
    const before = await getLease(NS);
    expect(before?.spec.holderIdentity).toBe(leaderIdentity);
    const sigtermAt = Date.now();
    await leader.stop();
    const stoppedAfterMs = Date.now() - sigtermAt;

    const taken = await waitFor(
      async () => {
        const current = await getLease(NS);
        return current?.spec.holderIdentity && current.spec.holderIdentity !== leaderIdentity ? current : undefined;
      },
      40_000,
      async () => `a new holder of Lease ${NS}/${LEASE}: ${JSON.stringify(await getLease(NS))}\n${(await standby.log()).slice(-3000)}`,
    );
    const handoverMs = Date.parse(taken.spec.acquireTime!) - sigtermAt;
    console.info(`leader stopped ${stoppedAfterMs} ms after SIGTERM; the standby held the Lease ${handoverMs} ms after SIGTERM`);

    // A graceful stop: the old leader released the Lease rather than letting it expire (15 s).
    const oldLog = await logLines(leader);
    expect(oldLog.some((line) => line.msg === 'released the lease' && line.identity === leaderIdentity)).toBe(true);
    expect(oldLog.some((line) => line.msg === 'controller stopped')).toBe(true);
    expect(stoppedAfterMs).toBeLessThan(15_000);
    // Release, then the standby's next try (every 2–4.4 s: retry period 2 s with jitter factor 1.2).
    expect(handoverMs).toBeGreaterThan(0);
    expect(handoverMs).toBeLessThan(stoppedAfterMs + 8_000);

    // The new leader logs and sets its gauge after its write of the Lease: wait for both.
    const electedLines = async () => (await logLines(standby)).filter((line) => line.msg === 'became leader');
    await waitFor(
      async () => (await electedLines()).length > 0 && (await leaderGauge(standby, NS)) === 1,
      10_000,
      async () => `the standby logging 'became leader' and its leader gauge at 1\n${(await standby.log()).slice(-3000)}`,
    );
    const newLeader = await electedLines();
    expect(newLeader).toHaveLength(1);
    expect(newLeader[0]!.identity).toBe(taken.spec.holderIdentity);
    expect(newLeader[0]!.transitions).toBe(1);
    expect(taken.spec.leaseTransitions).toBe(1);
    expect(taken.spec.leaseDurationSeconds).toBe(15);
    expect(await leaderGauge(standby, NS)).toBe(1);
  });

  it('reconciles a changed and a newly created KluctlDeployment on the new leader', async () => {
    const commit = await firstRepo.commit(configMapProject(NS, `e2e-ha-first-${suffix}`, { first: 'three' }), 'first = three');
    const changed = await reconcileNow(NS, 'first', () => standby.log());
    expect(changed.status.lastDeployResult.revision).toBe(commit);
    expect(changed.status.lastDeployResult.changedObjects).toBe(1);
    expect(await configMapValue(NS, 'first')).toBe('three');

    const secondRepo = await createRepo(configMapProject(NS, `e2e-ha-second-${suffix}`, { second: 'new' }));
    repos.push(secondRepo);
    await applyObject(kluctlDeployment(NS, 'second', secondRepo.url));
    const second = await waitReady(NS, 'second', () => standby.log());
    expect(second.status.lastDeployResult.newObjects).toBe(1);
    expect(await configMapValue(NS, 'second')).toBe('new');

    const onNewLeader = await reconcileLines(standby, NS);
    expect(onNewLeader.some((line) => line.name === 'first' && line.msg === 'Performing deploy')).toBe(true);
    expect(onNewLeader.some((line) => line.name === 'second' && line.msg === 'Performing deploy')).toBe(true);
    // Every reconcile on the former standby came after it became leader.
    const lines = await logLines(standby);
    const electedAt = lines.findIndex((line) => line.msg === 'became leader');
    expect(lines.findIndex((line) => line.reconcileID !== undefined)).toBeGreaterThan(electedAt);
    // And none on the stopped replica after its release.
    expect(await reconcileLines(leader, NS, 'second')).toEqual([]);
  });
});

describe('alerts sent by gantry controller run', { timeout: 300_000 }, () => {
  const NS = `gantry-e2e-ha-alerts-${suffix}`;
  const TOKEN = 'ha-alert-token';
  const HMAC_KEY = 'ha-alert-hmac-key';
  let controller: RunningController;
  let receiver: TestHttpServer;
  let repo: TestRepo;
  const BROKEN_URL = 'http://127.0.0.1:9/none.git';

  const posts = (path: string, name?: string): Array<ReceivedRequest & { payload: Record<string, any> }> =>
    receiver.received
      .filter((request) => request.path === path)
      .map((request) => ({ ...request, payload: JSON.parse(request.body) as Record<string, any> }))
      .filter(
        (request) =>
          name === undefined ||
          (request.payload.involvedObject?.name ?? request.payload.attachments?.[0]?.author_name?.split('/')[1]) === name,
      );

  const waitForPosts = (path: string, name: string, count: number) =>
    waitFor(
      async () => {
        const found = posts(path, name);
        return found.length >= count ? found : undefined;
      },
      60_000,
      async () =>
        `${count} post(s) to ${path} about ${name}; got ${JSON.stringify(receiver.received.map((request) => `${request.path} ${request.body}`))}\n${(await controller.log()).slice(-3000)}`,
    );

  async function alertReady(name: string): Promise<Record<string, string> | undefined> {
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
    receiver = await startHttpServer({ '/generic': { body: 'ok' }, '/slack': { body: 'ok' }, '/only-good': { body: 'ok' } });
    await kubectl(['create', 'namespace', NS]);
    const alert = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: API,
      kind: 'Alert',
      metadata: { name, namespace: NS },
      spec,
    });
    const every = [{ kind: 'KluctlDeployment', name: '*' }];
    await applyObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'generic-auth', namespace: NS },
      stringData: { token: TOKEN, hmacKey: HMAC_KEY },
    });
    await applyObject(
      alert('generic', {
        type: 'generic',
        address: `${receiver.url}/generic`,
        secretRef: { name: 'generic-auth' },
        summary: 'cluster: e2e-ha',
        eventSources: every,
      }),
    );
    await applyObject(
      alert('slack', { type: 'slack', address: `${receiver.url}/slack`, channel: '#deploys', eventSeverity: 'error', eventSources: every }),
    );
    await applyObject(
      alert('only-good', {
        type: 'generic',
        address: `${receiver.url}/only-good`,
        eventSources: [{ kind: 'KluctlDeployment', name: 'good' }],
      }),
    );
    repo = await createRepo(configMapProject(NS, `e2e-ha-alerts-${suffix}`, { alpha: 'a1', beta: 'b1' }));
    controller = await startController(['--namespace', NS]);
  });

  afterAll(async () => {
    await deleteDeployments(NS, ['good', 'broken', 'no-target']);
    await controller?.stop();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await receiver?.close();
    await repo?.remove();
  });

  it('sends a generic change alert with the counts for a deployment that created objects', async () => {
    await applyObject(kluctlDeployment(NS, 'good', repo.url));
    const deployment = await waitReady(NS, 'good', () => controller.log());
    const commit = deployment.status.lastDeployResult.revision as string;
    const [post, ...more] = await waitForPosts('/generic', 'good', 1);
    expect(more).toEqual([]);
    expect(post!.method).toBe('POST');
    expect(post!.headers['content-type']).toBe('application/json');
    expect(post!.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(post!.headers['x-signature']).toBe(`sha256=${createHmac('sha256', HMAC_KEY).update(post!.body).digest('hex')}`);
    expect(post!.payload).toMatchObject({
      involvedObject: { apiVersion: API, kind: 'KluctlDeployment', namespace: NS, name: 'good' },
      severity: 'info',
      reason: 'Deployed',
      message: 'deploy: 2 new, 0 changed, 0 deleted, 0 orphan object(s)',
      metadata: { revision: commit, summary: 'cluster: e2e-ha' },
      summary: { newObjects: 2, changedObjects: 0, deletedObjects: 0, orphanObjects: 0, warnings: 0, errors: 0 },
      reportingController: 'gantry-controller',
    });
    expect(Date.parse(post!.payload.timestamp)).not.toBeNaN();
    // The Alert naming this deployment gets the same event, without a token or signature (it has no Secret).
    const [named] = await waitForPosts('/only-good', 'good', 1);
    expect(named!.headers['authorization']).toBeUndefined();
    expect(named!.headers['x-signature']).toBeUndefined();
    expect(named!.payload).toMatchObject({ severity: 'info', reason: 'Deployed', involvedObject: { name: 'good' } });
    expect(named!.payload.metadata.summary).toBeUndefined();
    // The error-only Slack Alert stays silent for a success.
    expect(posts('/slack')).toEqual([]);
    await waitFor(
      async () => (await alertReady('generic'))?.status === 'True',
      30_000,
      () => 'Alert generic Ready',
    );
    expect(await alertReady('generic')).toMatchObject({ status: 'True', reason: 'Succeeded' });
  });

  it('sends a change alert for a changed object and a prune alert for a removed one, none for no change', async () => {
    const changedCommit = await repo.commit(configMapProject(NS, `e2e-ha-alerts-${suffix}`, { alpha: 'a2', beta: 'b1' }), 'alpha = a2');
    await reconcileNow(NS, 'good', () => controller.log());
    const changed = (await waitForPosts('/generic', 'good', 2))[1]!;
    expect(changed.payload).toMatchObject({
      severity: 'info',
      reason: 'Deployed',
      message: 'deploy: 0 new, 1 changed, 0 deleted, 0 orphan object(s)',
      metadata: { revision: changedCommit },
      summary: { newObjects: 0, changedObjects: 1, deletedObjects: 0 },
    });
    expect(await configMapValue(NS, 'alpha')).toBe('a2');

    // A reconcile that finds the same objects deploys nothing and tells nobody; its request result names no
    // command result (not the previous request's).
    const unchanged = await reconcileNow(NS, 'good', () => controller.log());
    expect(unchanged.status.reconcileRequestResult.resultId).toBeUndefined();
    expect(unchanged.status.lastDeployResult.revision).toBe(changedCommit);
    // Checked below: the next post is the prune's, so this reconcile posted nothing.
    const prunedCommit = await repo.commit({ 'app/beta.yaml': null }, 'drop beta');
    await reconcileNow(NS, 'good', () => controller.log());
    const pruned = (await waitForPosts('/generic', 'good', 3))[2]!;
    expect(pruned.payload).toMatchObject({
      severity: 'info',
      reason: 'Pruned',
      // The removed object is found orphaned, then pruned (both counted, as Kluctl's deploy --prune result does).
      message: 'deploy: 0 new, 0 changed, 1 deleted, 1 orphan object(s)',
      metadata: { revision: prunedCommit },
      summary: { newObjects: 0, changedObjects: 0, deletedObjects: 1, orphanObjects: 1 },
    });
    expect(posts('/generic', 'good')).toHaveLength(3);
    expect(await configMapValue(NS, 'beta')).toBeUndefined();
    // Each Alert is posted to on its own: the third post to /generic says nothing of /only-good's.
    await waitForPosts('/only-good', 'good', 3);
    expect(posts('/only-good', 'good')).toHaveLength(3);
    expect(posts('/slack')).toEqual([]);
  });

  it('sends generic and Slack failure alerts for a git source that cannot be fetched', async () => {
    await applyObject(kluctlDeployment(NS, 'broken', BROKEN_URL));
    const failed = await waitFor(
      async () => {
        const deployment = await getDeployment(NS, 'broken');
        return readyOf(deployment)?.status === 'False' ? deployment : undefined;
      },
      60_000,
      () => 'broken Ready False',
    );
    expect(readyOf(failed)).toMatchObject({ reason: 'PrepareFailed' });

    const [generic] = await waitForPosts('/generic', 'broken', 1);
    expect(generic!.payload).toMatchObject({
      involvedObject: { apiVersion: API, kind: 'KluctlDeployment', namespace: NS, name: 'broken' },
      severity: 'error',
      reason: 'PrepareFailed',
      metadata: { summary: 'cluster: e2e-ha' },
      reportingController: 'gantry-controller',
    });
    expect(generic!.payload.message).toContain(BROKEN_URL);
    expect(generic!.payload.summary).toBeUndefined();
    expect(generic!.payload.metadata.revision).toBeUndefined();

    const [slack] = await waitForPosts('/slack', 'broken', 1);
    expect(slack!.headers['content-type']).toBe('application/json');
    expect(slack!.payload.channel).toBe('#deploys');
    expect(slack!.payload.text).toBe(`:red_circle: KluctlDeployment ${NS}/broken: PrepareFailed`);
    expect(slack!.payload.attachments).toHaveLength(1);
    expect(slack!.payload.attachments[0]).toMatchObject({
      color: 'danger',
      author_name: `KluctlDeployment ${NS}/broken`,
      title: 'PrepareFailed',
      fields: [],
      footer: 'gantry-controller',
    });
    expect(slack!.payload.attachments[0].text).toContain(BROKEN_URL);
    // Only the Alert naming `good` is not told.
    expect(posts('/only-good', 'broken')).toEqual([]);
    await waitFor(
      async () => (await alertReady('slack'))?.status === 'True',
      30_000,
      () => 'Alert slack Ready',
    );
  });

  it('sends failure alerts naming a target the project does not have', async () => {
    await applyObject(kluctlDeployment(NS, 'no-target', repo.url, { target: 'nope' }));
    const [generic] = await waitForPosts('/generic', 'no-target', 1);
    expect(generic!.payload).toMatchObject({
      involvedObject: { namespace: NS, name: 'no-target' },
      severity: 'error',
      reason: 'PrepareFailed',
    });
    expect(generic!.payload.message).toContain('nope');
    const [slack] = await waitForPosts('/slack', 'no-target', 1);
    expect(slack!.payload.attachments[0]).toMatchObject({ color: 'danger', title: 'PrepareFailed' });
    expect(slack!.payload.attachments[0].text).toContain('nope');
    // The failure is alerted while the reconcile ends: its status may be written after the posts arrived.
    const noTarget = await waitFor(
      async () => {
        const deployment = await getDeployment(NS, 'no-target');
        return readyOf(deployment)?.status === 'False' ? deployment : undefined;
      },
      60_000,
      () => 'no-target Ready False',
    );
    expect(readyOf(noTarget)).toMatchObject({ status: 'False', reason: 'PrepareFailed' });
    // The broken deployment has been retried with backoff meanwhile; the same failure was told once.
    expect(readyOf(await getDeployment(NS, 'broken'))?.status).toBe('False');
    expect(posts('/generic', 'broken')).toHaveLength(1);
    expect(posts('/slack', 'broken')).toHaveLength(1);
  });
});
