/**
 * Release pipelines end to end: a server (SQLite) in this process, the two workload clusters with their agents, and
 * the seed's pipeline (../shared/fixtures/plural/pipeline-example.yaml) made through the API: the service
 * upgrade-plan on dev and on prod, dev → prod behind an APPROVAL gate, prod promoted from dev with its `version`
 * secret. prod starts at a fixed commit, as a promotion leaves it (the seed has both follow master; then a commit
 * would reach prod by itself). A commit lands on dev; dev turns healthy; the gate goes PENDING; `gantry pipeline
 * approve` opens it; prod runs exactly dev's commit and version. Two commits in quick succession promote only the
 * newer.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { type ApiPipeline, FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { createApiToken } from '../../src/store/api-tokens.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { configMapTemplate, startChartRepository } from '../support/chart-server.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';
import { startMetricsTarget, startPrometheus } from '../support/prometheus.ts';
import { kubectlJsonOn, WORKLOAD_CLUSTERS, workloadKubeConfig } from '../support/workload-clusters.ts';

const [DEV, PROD] = WORKLOAD_CLUSTERS;
const NS = `upgrade-plan-${randomBytes(3).toString('hex')}`;
const plan = (round: number) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upgrade-plan\ndata:\n  round: "${round}"\n  version: "{{ configuration.version }}"\n`;

describe('release pipelines', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  let env: Record<string, string>;
  let receiver: TestHttpServer;
  /** The clock WINDOW and HEALTH gates see: the system's unless a test fixes it. */
  let now = () => new Date();
  const agents: RunningAgent[] = [];
  const { log } = capturedLogger('info');

  const pipeline = () => client.getPipeline('k3s-upgrade');
  /** The pipeline once dev's context holds `commit` and the gate is PENDING for it. */
  const pendingAt = (commit: string) =>
    waitFor(
      `dev's context at ${commit.slice(0, 7)} with the gate pending`,
      async () => {
        const found = await pipeline();
        const dev = found.stages.find((stage) => stage.name === 'dev')!;
        const gate = found.edges[0]!.gates[0]!;
        return dev.context?.services[0]?.commit === commit && gate.state === 'PENDING' && gate.contextId === dev.context.id
          ? found
          : undefined;
      },
      60_000,
    );
  /** The ConfigMap prod runs, once its round is `round`. */
  const prodRuns = (round: number) =>
    waitFor(
      `prod running round ${round}`,
      async () => {
        const cm = await kubectlJsonOn<{ data: Record<string, string> }>(PROD, ['get', 'configmap', 'upgrade-plan', '-n', NS]).catch(
          () => undefined,
        );
        return cm?.data.round === String(round) ? cm.data : undefined;
      },
      60_000,
    );

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-pipelines-'));
    repo = await createRepo({ 'test-apps/k3s/configmap.yaml.liquid': plan(1) });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { box: new SecretBox(randomBytes(32)), gitPollIntervalMs: 300, now: () => now() },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    env = { XDG_CONFIG_HOME: path.join(dir, 'config'), GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken! };
    engine = new Engine(testConfig());
    for (const cluster of WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name: cluster });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(cluster) };
      agents.push(
        startAgent(pushedAgentOptions({ ...options, dataDir: path.join(dir, `agent-${cluster}`), log: log.child({ agent: cluster }) })),
      );
    }
    await client.createRepository({ url: repo.url });
    receiver = await startHttpServer({ '/hook': { body: 'ok' } });
    await client.setSink('releases', { type: 'webhook', url: `${receiver.url}/hook` });
    await client.setRouter('releases', {
      events: ['pipeline.update'],
      filters: [{ regex: '^pipeline/k3s-upgrade$' }],
      sinks: ['releases'],
    });
    const dev = await client.createService(DEV, {
      name: 'upgrade-plan',
      namespace: NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'test-apps/k3s' },
      configuration: { version: 'v1' },
    });
    // prod at a fixed commit, as a promotion leaves it: only promotions move it, not main.
    await client.createService(PROD, {
      name: 'upgrade-plan',
      namespace: NS,
      repository: repo.url,
      git: { ref: dev.revision.commit!, folder: 'test-apps/k3s' },
      configuration: { version: 'v0' },
    });
  });

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await server?.close();
    await receiver?.close();
    await engine?.close();
    await repo?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  test("the seed example: dev healthy puts the approval gate to PENDING; approving it gives prod dev's commit and version", async () => {
    const created = await client.setPipeline('k3s-upgrade', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'upgrade-plan' }] },
        {
          name: 'prod',
          services: [{ cluster: PROD, name: 'upgrade-plan', criteria: { cluster: DEV, name: 'upgrade-plan', secrets: ['version'] } }],
        },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'approval-gate', type: 'APPROVAL' }] }],
    });
    expect(created.edges[0]!.promoted).toBe(false);
    const first = (await client.getService(DEV, 'upgrade-plan')).revision.commit!;
    await pendingAt(first);

    const round2 = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(2) }, 'round 2');
    await client.updateService(DEV, 'upgrade-plan', { configuration: { version: 'v2' } });
    const pending = await pendingAt(round2);
    expect((await client.getService(PROD, 'upgrade-plan')).revision.commit).toBe(first);
    expect(pending.edges[0]!.promoted).toBe(false);

    const approved = await gantry(['pipeline', 'approve', 'k3s-upgrade', 'approval-gate'], { env });
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toContain('gate approval-gate (APPROVAL): OPEN by admin');
    expect(await prodRuns(2)).toEqual({ round: '2', version: 'v2' });
    const prod = await client.getService(PROD, 'upgrade-plan');
    expect(prod.git).toEqual({ ref: round2, folder: 'test-apps/k3s' });
    expect(prod.revision.createdBy).toBe('pipeline/k3s-upgrade');
    const [promotion] = await client.listPromotions('k3s-upgrade');
    expect(promotion).toMatchObject({
      from: 'dev',
      to: 'prod',
      services: [{ cluster: PROD, name: 'upgrade-plan', source: `${DEV}/upgrade-plan`, commit: round2, secrets: ['version'] }],
      gates: [{ name: 'approval-gate', decidedBy: 'admin', forced: false }],
    });
    // The router's webhook heard of the approval waiting and of the promotion (each delivered on its own).
    const waiting = new RegExp(
      `^gate approval-gate on dev → prod waits for approval of stage dev at upgrade-plan rev \\d+ ${round2.slice(0, 7)}$`,
    );
    const messages = await waitFor('the approval waiting and the promotion notified', () => {
      const received = receiver.received.map((request) => JSON.parse(request.body) as { type: string; message: string });
      return received.some((event) => event.message.startsWith('promoted dev → prod')) &&
        received.some((event) => waiting.test(event.message))
        ? received
        : undefined;
    });
    expect(messages.every((event) => event.type === 'pipeline.update')).toBe(true);
    expect(messages.some((event) => waiting.test(event.message))).toBe(true);
  });

  test('two commits in quick succession on dev promote only the newer', async () => {
    const round3 = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(3) }, 'round 3');
    const round4 = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(4) }, 'round 4');
    await pendingAt(round4);
    const decided: ApiPipeline = await client.decideGate('k3s-upgrade', { from: 'dev', to: 'prod' }, 'approval-gate', 'approve');
    expect(decided.edges[0]!.gates[0]!.state).toBe('OPEN');
    expect((await prodRuns(4)).round).toBe('4');
    const commits = (await client.listPromotions('k3s-upgrade')).map((promotion) => promotion.services[0]!.commit);
    expect(commits).not.toContain(round3);
    expect(commits[0]).toBe(round4);

    const history = await gantry(['pipeline', 'history', 'k3s-upgrade'], { env });
    expect(history.stdout).toContain(`${PROD}/upgrade-plan@${round4.slice(0, 7)}`);
  });

  test('a reader may not decide a gate, an approver may approve but not force; an admin forces, recorded as forced', async () => {
    const as = async (role: 'reader' | 'approver') =>
      new FleetClient({
        server: server.url,
        token: await createApiToken(server.store.db, `${role}-${randomBytes(2).toString('hex')}`, role),
      });
    const edge = { from: 'dev', to: 'prod' };
    const round5 = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(5) }, 'round 5');
    await pendingAt(round5);
    await expect((await as('reader')).decideGate('k3s-upgrade', edge, 'approval-gate', 'approve')).rejects.toMatchObject({ status: 403 });
    const approver = await as('approver');
    await expect(approver.decideGate('k3s-upgrade', edge, 'approval-gate', 'force')).rejects.toMatchObject({ status: 403 });
    await approver.decideGate('k3s-upgrade', edge, 'approval-gate', 'approve');
    expect((await prodRuns(5)).round).toBe('5');

    const round6 = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(6) }, 'round 6');
    await pendingAt(round6);
    await client.decideGate('k3s-upgrade', edge, 'approval-gate', 'force');
    expect((await prodRuns(6)).round).toBe('6');
    const [forced, approved] = await client.listPromotions('k3s-upgrade');
    expect(forced!.gates).toEqual([{ name: 'approval-gate', type: 'APPROVAL', decidedBy: 'admin', forced: true }]);
    expect(approved!.gates[0]!.decidedBy).toMatch(/^approver-/);
  });

  test('a WINDOW gate opens its edge only inside its window, with the clock injected', async () => {
    const namespace = `${NS}-w`;
    const dev = await client.createService(DEV, {
      name: 'windowed',
      namespace,
      repository: repo.url,
      git: { ref: 'main', folder: 'test-apps/k3s' },
      configuration: { version: 'w1' },
    });
    await client.createService(PROD, {
      name: 'windowed',
      namespace,
      repository: repo.url,
      git: { ref: `${dev.revision.commit}`, folder: 'test-apps/k3s' },
      configuration: { version: 'w0' },
    });
    now = () => new Date('2026-11-28T12:00:00Z'); // a Saturday
    await client.setPipeline('windowed', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'windowed' }] },
        {
          name: 'prod',
          services: [{ cluster: PROD, name: 'windowed', criteria: { cluster: DEV, name: 'windowed', secrets: ['version'] } }],
        },
      ],
      edges: [
        {
          from: 'dev',
          to: 'prod',
          gates: [
            {
              name: 'office-hours',
              type: 'WINDOW',
              window: { timeZone: 'Europe/Berlin', windows: [{ cron: '0 9 * * 1-5', duration: '8h' }] },
            },
          ],
        },
      ],
    });
    const gateOf = async () => (await client.getPipeline('windowed')).edges[0]!.gates[0]!;
    const closed = await waitFor('the window gate evaluated for a context', async () => {
      const gate = await gateOf();
      return gate.contextId && gate.reason ? gate : undefined;
    });
    expect(closed).toMatchObject({ state: 'PENDING', reason: 'outside every window; the next opens at 2026-11-30T08:00:00.000Z' });
    expect((await client.getPipeline('windowed')).edges[0]!.promoted).toBe(false);

    // Monday 10:00 in Berlin; the server's timer would evaluate the edge then, as start() does now.
    now = () => new Date('2026-11-30T09:00:00Z');
    await server.pipelines.start();
    expect(await gateOf()).toMatchObject({ state: 'OPEN' });
    const promoted = await client.getService(PROD, 'windowed');
    expect(promoted.git?.ref).toBe(dev.revision.commit);
    expect(promoted.revision.createdBy).toBe('pipeline/windowed');
    await client.deletePipeline('windowed');
  });

  test('a gate still pending past its timeout closes by itself, saying so; each edge says what it waits for', async () => {
    const namespace = `${NS}-t`;
    const dev = await client.createService(DEV, {
      name: 'timed',
      namespace,
      repository: repo.url,
      git: { ref: 'main', folder: 'test-apps/k3s' },
      configuration: { version: 't1' },
    });
    await client.createService(PROD, {
      name: 'timed',
      namespace,
      repository: repo.url,
      git: { ref: `${dev.revision.commit}`, folder: 'test-apps/k3s' },
      configuration: { version: 't0' },
    });
    now = () => new Date('2026-11-28T12:00:00Z'); // a Saturday
    await client.setPipeline('timed', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'timed' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'timed', criteria: { cluster: DEV, name: 'timed', secrets: ['version'] } }] },
      ],
      edges: [
        {
          from: 'dev',
          to: 'prod',
          gates: [
            { name: 'approval', type: 'APPROVAL', timeout: '1h' },
            { name: 'office-hours', type: 'WINDOW', window: { windows: [{ cron: '0 9 * * 1-5', duration: '8h' }] } },
          ],
        },
      ],
    });
    const edge = async () => (await client.getPipeline('timed')).edges[0]!;
    const waiting = await waitFor('the edge waiting at both gates', async () => {
      const found = await edge();
      return found.waitingFor.length === 2 && found.waitingFor[1]!.includes('outside every window') ? found : undefined;
    });
    expect(waiting.waitingFor[0]).toMatch(
      /^APPROVAL gate approval: waits for an approver since \S+; times out at 2026-11-28T13:00:00\.000Z$/,
    );
    expect(waiting.waitingFor[1]).toBe('WINDOW gate office-hours: outside every window; the next opens at 2026-11-30T09:00:00.000Z');
    expect(waiting.gates[0]).toMatchObject({ state: 'PENDING', timeout: '1h' });

    // Two hours later (the server's timer would evaluate the edge at the deadline, as start() does now).
    now = () => new Date('2026-11-28T14:00:00Z');
    await server.pipelines.start();
    const timedOut = await edge();
    expect(timedOut.gates[0]).toMatchObject({
      state: 'CLOSED',
      reason: 'timed out: still pending 1h after stage dev settled at this context',
    });
    expect(timedOut.waitingFor[0]).toBe(
      "APPROVAL gate approval is closed: timed out: still pending 1h after stage dev settled at this context; a new context of stage dev or an admin's force opens it",
    );
    const text = await gantry(['pipeline', 'get', 'timed'], { env });
    expect(text.stdout).toContain('gate approval (APPROVAL) [timeout 1h]: CLOSED: timed out');
    expect(text.stdout).toContain('waiting for: WINDOW gate office-hours: outside every window');

    // A rollback pins prod: the edge says a promotion would wait there.
    await client.rollbackService(PROD, 'timed', 1);
    expect((await edge()).waitingFor.at(-1)).toMatch(
      new RegExp(`^${PROD}/timed is pinned by \\S+ \\(a rollback\\): a promotion will wait until it is released$`),
    );
    await client.deletePipeline('timed');
  });

  test("three stages: a JOB gate whose Job succeeds promotes inside its WINDOW; one whose Job fails closes with the Job's reason", async () => {
    const service = async (cluster: string, name: string, ref: string) =>
      await client.createService(cluster, {
        name,
        namespace: `${NS}-${name}`,
        repository: repo.url,
        git: { ref, folder: 'test-apps/k3s' },
        configuration: { version: name },
      });
    const dev = await service(DEV, 'jobs-dev', 'main');
    await service(PROD, 'jobs-staging', dev.revision.commit!);
    await service(PROD, 'jobs-prod', dev.revision.commit!);
    const smoke = {
      name: 'smoke',
      type: 'JOB' as const,
      job: { cluster: DEV, namespace: `${NS}-gates`, containers: [{ name: 'check', image: 'registry.invalid/check:1' }] },
    };
    // A real Job failure: no node matches its Pod, and the job controller fails it after its deadline.
    const checks = {
      name: 'checks',
      type: 'JOB' as const,
      job: {
        cluster: DEV,
        namespace: `${NS}-gates`,
        raw: {
          activeDeadlineSeconds: 1,
          backoffLimit: 0,
          template: {
            spec: {
              nodeSelector: { 'gantry.dev/no-such-node': 'true' },
              containers: [{ name: 'check', image: 'registry.invalid/check:1' }],
              restartPolicy: 'Never',
            },
          },
        },
      },
    };
    now = () => new Date('2026-11-30T09:00:00Z'); // Monday 10:00 in Berlin: inside the window
    await client.setPipeline('jobs', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'jobs-dev' }] },
        { name: 'staging', services: [{ cluster: PROD, name: 'jobs-staging', criteria: { cluster: DEV, name: 'jobs-dev' } }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'jobs-prod', criteria: { cluster: DEV, name: 'jobs-dev' } }] },
      ],
      edges: [
        {
          from: 'dev',
          to: 'staging',
          gates: [
            smoke,
            {
              name: 'office-hours',
              type: 'WINDOW',
              window: { timeZone: 'Europe/Berlin', windows: [{ cron: '0 9 * * 1-5', duration: '8h' }] },
            },
          ],
        },
        { from: 'staging', to: 'prod', gates: [checks] },
      ],
    });
    const edgeOf = async (from: string) => (await client.getPipeline('jobs')).edges.find((edge) => edge.from === from)!;
    await waitFor('dev → staging promoted after its Job completed', async () => (await edgeOf('dev')).promoted, 50_000);
    const smokeGate = (await edgeOf('dev')).gates.find((gate) => gate.name === 'smoke');
    expect(smokeGate).toMatchObject({ state: 'OPEN', decidedBy: 'job' });
    // The local clusters' kubelet (kwok) keeps no container logs: the agent reports the Pod, and what the API said.
    expect(smokeGate?.logs).toMatch(/^==> gate-[0-9a-f]{16}-[a-z0-9]{5}\/check <==\n\S/);
    const logs = await gantry(['pipeline', 'logs', 'jobs', 'smoke'], { env });
    expect(logs).toMatchObject({ code: 0, stdout: `${smokeGate!.logs}\n` });
    expect((await gantry(['pipeline', 'logs', 'jobs', 'office-hours'], { env })).stderr).toContain(
      'gate office-hours is WINDOW: only JOB gates have logs',
    );
    expect((await client.getService(PROD, 'jobs-staging')).git?.ref).toBe(dev.revision.commit);

    const closed = await waitFor(
      'the failing Job closed staging → prod',
      async () => {
        const gate = (await edgeOf('staging')).gates[0]!;
        return gate.state === 'CLOSED' ? gate : undefined;
      },
      90_000,
    );
    expect(closed.reason).toMatch(/^job gate-[0-9a-f]{16} failed \(DeadlineExceeded: Job was active longer than specified deadline\)$/);
    // Past its deadline, the job controller deletes the Job's Pods: gone by then, or still being deleted.
    expect(closed.logs).toMatch(
      /^(\(no Pod of job gate-[0-9a-f]{16} is left to read a log from\)|==> gate-[0-9a-f]{16}-[a-z0-9]{5}\/check <==\n)/,
    );
    expect((await edgeOf('staging')).promoted).toBe(false);
    expect((await client.getService(PROD, 'jobs-prod')).revision.number).toBe(1);
    await client.deletePipeline('jobs');
  });

  test('a HEALTH gate: a query holding through the soak opens it; one that does not hold closes it with the query', async () => {
    now = () => new Date();
    const target = await startMetricsTarget(0.01);
    const prometheus = await startPrometheus(target.address);
    onTestFinished(async () => {
      await prometheus.close();
      await target.close();
    });
    await prometheus.scraped(0.01);
    const dev = await client.createService(DEV, {
      name: 'soaked',
      namespace: `${NS}-soaked`,
      repository: repo.url,
      git: { ref: 'main', folder: 'test-apps/k3s' },
      configuration: { version: 's1' },
    });
    await client.createService(PROD, {
      name: 'soaked',
      namespace: `${NS}-soaked`,
      repository: repo.url,
      git: { ref: dev.revision.commit!, folder: 'test-apps/k3s' },
      configuration: { version: 's0' },
    });
    const health = { soak: '2s', interval: '500ms', prometheus: { url: prometheus.url, query: 'gantry_test_error_ratio < 0.05' } };
    await client.setPipeline('soaked', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'soaked' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'soaked', criteria: { cluster: DEV, name: 'soaked' } }] },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'error-rate', type: 'HEALTH', health }] }],
    });
    const edge = async () => (await client.getPipeline('soaked')).edges[0]!;
    await waitFor('promoted after the soak', async () => (await edge()).promoted);
    expect((await edge()).gates[0]).toMatchObject({ state: 'OPEN', reason: 'healthy for 2s, the query holding' });
    const [promotion] = await client.listPromotions('soaked');
    // The soak: the promotion came at least 2 s after dev's context.
    const context = (await client.getPipeline('soaked')).stages[0]!.context!;
    expect(Date.parse(promotion!.createdAt) - Date.parse(context.createdAt)).toBeGreaterThanOrEqual(2_000);

    target.set(0.5);
    await prometheus.scraped(0.5);
    const next = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(7) }, 'round 7');
    const closed = await waitFor('the gate closed by the query', async () => {
      const gate = (await edge()).gates[0]!;
      return gate.state === 'CLOSED' ? gate : undefined;
    });
    expect(closed.reason).toBe('the query gantry_test_error_ratio < 0.05 did not hold: no series matched');
    expect((await client.getService(PROD, 'soaked')).git?.ref).not.toBe(next);
    await client.deletePipeline('soaked');
  });

  test('a revision rejected for the target is never promoted into it: the promotion passes it over and says why', async () => {
    const namespace = `${NS}-r`;
    const dev = await client.createService(DEV, {
      name: 'rejecting',
      namespace,
      repository: repo.url,
      git: { ref: 'main', folder: 'test-apps/k3s' },
      configuration: { version: 'r1' },
    });
    const prod = await client.createService(PROD, {
      name: 'rejecting',
      namespace,
      repository: repo.url,
      git: { ref: `${dev.revision.commit}`, folder: 'test-apps/k3s' },
      configuration: { version: 'r0' },
    });
    // prod once ran the commit dev is at next, and it was rejected there.
    const bad = await repo.commit({ 'test-apps/k3s/configmap.yaml.liquid': plan(90) }, 'round 90');
    await waitFor('dev at the commit', async () => (await client.getService(DEV, 'rejecting')).revision.commit === bad);
    const ran = await client.updateService(PROD, 'rejecting', { git: { ref: bad } });
    const outcome = await client.rejectRevision(PROD, 'rejecting', ran.revision.number, { reason: 'breaks prod' });
    expect(outcome.movedBack).toEqual([{ cluster: PROD, name: 'rejecting', from: ran.revision.number, to: ran.revision.number + 1 }]);
    await client.setRouter('rejecting', { events: ['pipeline.update'], filters: [{ regex: '^pipeline/rejecting$' }], sinks: ['releases'] });
    await client.setPipeline('rejecting', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'rejecting' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'rejecting', criteria: { cluster: DEV, name: 'rejecting' } }] },
      ],
      edges: [{ from: 'dev', to: 'prod' }],
    });
    await waitFor('dev → prod evaluated', async () => (await client.getPipeline('rejecting')).edges[0]!.promoted);
    expect((await client.getService(PROD, 'rejecting')).revision.number).toBe(ran.revision.number + 1);
    const said = await waitFor('the skipped promotion notified', () =>
      receiver.received
        .map((request) => (JSON.parse(request.body) as { message: string }).message)
        .find((message) => message.startsWith('rejecting not promoted along dev → prod')),
    );
    expect(said).toBe(`rejecting not promoted along dev → prod: the content of ${bad.slice(0, 12)} was rejected: breaks prod`);
    expect(prod.revision.number).toBe(1);
    await client.deletePipeline('rejecting');
  });

  test('an edge without gates promotes a Helm service: the chart version dev resolved is copied to prod', async () => {
    const charts = await startChartRepository();
    onTestFinished(() => charts.close());
    const chart = (version: string) => ({ name: 'greeting', version, files: { 'templates/cm.yaml': configMapTemplate('greeting') } });
    await charts.publish(chart('1.0.0'));
    const helm = (version: string) => ({ url: charts.url, chart: 'greeting', version });
    await client.createService(DEV, { name: 'charted', namespace: `${NS}-charted`, helm: helm('^1.0') });
    await client.createService(PROD, { name: 'charted', namespace: `${NS}-charted`, helm: helm('1.0.0') });
    await client.setPipeline('charted', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'charted' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'charted', criteria: { cluster: DEV, name: 'charted' } }] },
      ],
      edges: [{ from: 'dev', to: 'prod' }],
    });
    await charts.publish(chart('1.1.0'));
    const cm = await waitFor(
      "prod running dev's new chart version",
      async () => {
        const found = await kubectlJsonOn<{ data: Record<string, string> }>(PROD, [
          'get',
          'configmap',
          'greeting',
          '-n',
          `${NS}-charted`,
        ]).catch(() => undefined);
        return found?.data.chartVersion === '1.1.0' ? found : undefined;
      },
      60_000,
    );
    expect(cm.data.chartVersion).toBe('1.1.0');
    expect((await client.getService(PROD, 'charted')).helm?.version).toBe('1.1.0');
    await client.deletePipeline('charted');
  });

  test('approving a promotion to a stage that already runs the source commit records nothing to promote and makes no revision', async () => {
    // Both follow main, so both run its head: promoting would only pin prod's ref to the commit it runs.
    const create = (cluster: string) =>
      client.createService(cluster, {
        name: 'level',
        namespace: `${NS}-level`,
        repository: repo.url,
        git: { ref: 'main', folder: 'test-apps/k3s' },
        configuration: { version: 'same' },
      });
    const dev = await create(DEV);
    const prod = await create(PROD);
    expect(prod.revision.commit).toBe(dev.revision.commit);
    await client.setPipeline('level', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'level' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'level', criteria: { cluster: DEV, name: 'level', secrets: ['version'] } }] },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'approval', type: 'APPROVAL' }] }],
    });
    await waitFor(
      "the gate pending for dev's context",
      async () => {
        const gate = (await client.getPipeline('level')).edges[0]!.gates[0]!;
        return gate.state === 'PENDING' && gate.contextId ? gate : undefined;
      },
      60_000,
    );
    await client.decideGate('level', { from: 'dev', to: 'prod' }, 'approval', 'approve');
    await waitFor('the edge promoted', async () => (await client.getPipeline('level')).edges[0]!.promoted);
    const promotions = await client.listPromotions('level');
    expect(promotions).toMatchObject([{ from: 'dev', to: 'prod', services: [], gates: [{ name: 'approval', decidedBy: 'admin' }] }]);
    const after = await client.getService(PROD, 'level');
    expect({ revision: after.revision.number, ref: after.git?.ref }).toEqual({ revision: prod.revision.number, ref: 'main' });
    const history = await gantry(['pipeline', 'history', 'level'], { env });
    expect(history.stdout).toMatch(/dev → prod +nothing to promote +approval by admin/);
    await client.deletePipeline('level');
  });

  test('bad pipelines are refused naming the offending stage, edge or service; a stage without context has no gate to approve', async () => {
    const stages = [
      { name: 'dev', services: [{ cluster: DEV, name: 'upgrade-plan' }] },
      { name: 'prod', services: [{ cluster: PROD, name: 'upgrade-plan' }] },
    ];
    const refused = async (body: Parameters<FleetClient['setPipeline']>[1]) =>
      await client.setPipeline('bad', body).then(
        () => undefined,
        (error: { status: number; field: string; message: string }) => error,
      );
    expect(await refused({ stages, edges: [{ from: 'dev', to: 'qa' }] })).toMatchObject({ status: 400, field: 'body.edges[0].to' });
    expect(
      await refused({
        stages,
        edges: [
          { from: 'dev', to: 'prod' },
          { from: 'prod', to: 'dev' },
        ],
      }),
    ).toMatchObject({ status: 400, field: 'body.edges[1]', message: 'edges form a cycle: dev → prod → dev' });
    expect(
      await refused({
        stages: [
          stages[0]!,
          { name: 'prod', services: [{ cluster: PROD, name: 'upgrade-plan', criteria: { cluster: PROD, name: 'other' } }] },
        ],
        edges: [{ from: 'dev', to: 'prod' }],
      }),
    ).toMatchObject({ status: 400, field: 'body.stages[1].services[0].criteria' });
    expect(
      await refused({
        stages,
        edges: [
          {
            from: 'dev',
            to: 'prod',
            gates: [
              { name: 'late', type: 'WINDOW', window: { timeZone: 'Europe/Berlin', windows: [{ cron: '0 25 * * *', duration: '1h' }] } },
            ],
          },
        ],
      }),
    ).toMatchObject({ status: 400, field: 'body.edges[0].gates[0].window.windows[0].cron' });
    expect(
      await refused({ stages, edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'slow', type: 'APPROVAL', timeout: 'a while' }] }] }),
    ).toMatchObject({ status: 400, field: 'body.edges[0].gates[0].timeout', message: expect.stringContaining('gate slow:') });
    expect(await refused({ stages: [{ name: 'dev', services: [{ cluster: DEV, name: 'nope' }] }], edges: [] })).toMatchObject({
      status: 400,
      field: 'body.stages[0].services[0]',
      message: `cluster ${DEV} has no service nope`,
    });
    expect((await client.listPipelines()).map((p) => p.name)).toEqual(['k3s-upgrade']);
  });
});
