/**
 * Progressive rollouts (issue 43, part 2) on three real workload clusters, each with its agent: test-dev is the
 * canary wave, test-stage the early wave, test-prod the rest. The global service `ringed` keeps a ConfigMap on each.
 * - A healthy commit goes wave by wave: each wave is released only after the one before is healthy and soaked, and
 *   the rollout ends DONE with no copy pinned.
 * - A commit whose ConfigMap the API server refuses fails on the canary: the canary goes back to the revision it ran,
 *   and the later waves never get it (their ConfigMaps are not written, as a watch proves).
 * - Each step is a `rollout.update` notification to a webhook sink: started, each wave done, done or failed.
 * - A pipeline stage with a rollout (test-stage early, test-prod the rest) gets a promotion wave by wave and records
 *   its context only once the rollout is done; a commit that fails on test-stage alone (healthy on dev) goes back
 *   there, never reaches test-prod, and its content is promoted no more.
 * - A pause holds through a server restart: the restarted server evaluates the rollout and releases nothing; resume
 *   finishes it (through the CLI, which also shows which cluster is at which revision).
 * - A chart version of the global service `charted` (a Helm source with a version range, from a real chart
 *   repository) goes wave by wave too; one the API server refuses is rolled back on the canary and never recorded
 *   again, though the range still picks it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import type { ApiRollout } from '../../src/api/rollouts.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, type FleetServerOptions, startFleetServer } from '../../src/server/server.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions, userToken } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { ALL_WORKLOAD_CLUSTERS, kubectlJsonOn, kubectlOn, type WorkloadCluster, workloadKubeConfig } from '../support/workload-clusters.ts';
import { watchWrites } from '../support/write-watch.ts';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';
import { type ChartRepository, configMapTemplate, startChartRepository, type TestChart } from '../support/chart-server.ts';
import { launchBrowser, openPage, screenshot } from '../support/browser.ts';
import type { Browser, Page } from 'playwright-core';

const ADMIN_PASSWORD = 'admin-password-for-rollouts';
const NS = `rollout-${randomBytes(3).toString('hex')}`;
const CHART_NS = `${NS}-chart`;
const STAGED_NS = `${NS}-staged`;
/** A ConfigMap whose color test-stage's API server refuses (a number) when `failsEarly`, for the ring each service says. */
const stagedConfigMap = (color: string, failsEarly = false) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: staged\ndata:\n  color: ${failsEarly ? `{% if configuration.ring == "early" %}42{% else %}${color}{% endif %}` : color}\n`;
const RINGS: Record<WorkloadCluster, string> = { 'test-dev': 'canary', 'test-stage': 'early', 'test-prod': 'late' };
const configMap = (color: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ringed\ndata:\n  color: ${color}\n`;
/** The API server refuses it (a ConfigMap's data values are strings): the copy's apply fails. */
const refused = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ringed\ndata:\n  color: 42\n`;

describe('progressive rollouts on three workload clusters', () => {
  let dir: string;
  let server: FleetServer;
  let serverOptions: FleetServerOptions;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  let admin: string;
  let env: Record<string, string>;
  let browser: Browser | undefined;
  let charts: ChartRepository | undefined;
  /** The webhook sink of the router of ringed's rollout.update events. */
  let receiver: TestHttpServer;
  const agents: RunningAgent[] = [];
  const { log } = capturedLogger('info');

  const color = async (cluster: WorkloadCluster) =>
    (await kubectlJsonOn<{ data: Record<string, string> }>(cluster, ['get', 'configmap', 'ringed', '-n', NS]).catch(() => undefined))?.data
      .color;
  const rollout = () => client.getRollout('ringed');
  const rolloutIs = (state: ApiRollout['state'], cause?: string) =>
    waitFor(
      `the rollout ${state}`,
      async () => {
        const found = await rollout().catch(() => undefined);
        return found?.state === state && (!cause || found.cause.includes(cause)) ? found : undefined;
      },
      90_000,
    );
  /** Waits until the server fetched the repository twice more (each fetch makes the commit tracker look again). */
  const twoMoreFetches = async () => {
    const pulledAt = async () => (await client.listRepositories())[0]!.pulledAt;
    for (let round = 0; round < 2; round++) {
      const before = await pulledAt();
      await waitFor('another fetch of the repository', async () => (await pulledAt()) !== before, 30_000);
    }
  };
  /** The messages of the rollout.update events of the rollout `id` the sink has had, once it has had `count`. */
  const notified = (id: string, count: number) =>
    waitFor(`${count} rollout.update events`, () => {
      const events = receiver.received.map(
        (request) => JSON.parse(request.body) as { type: string; rollout: { id: string }; message: string },
      );
      const ours = events.filter((event) => event.rollout.id === id);
      expect(events.every((event) => event.type === 'rollout.update')).toBe(true);
      return ours.length >= count ? ours.map((event) => event.message) : undefined;
    });
  /** Waits until the service is healthy at its current revision (after a rollback: the revision it ran before). */
  const settled = (cluster: WorkloadCluster, service: string) =>
    waitFor(
      `${cluster}/${service} healthy at its revision`,
      async () => {
        const found = await client.getService(cluster, service).catch(() => undefined);
        return found?.status === 'healthy' && found.appliedRevision === found.revision.number;
      },
      60_000,
    );
  const copy = (found: ApiRollout, cluster: WorkloadCluster) => found.copies.find((candidate) => candidate.cluster === cluster)!;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-rollout-'));
    repo = await createRepo({ 'ringed/cm.yaml': configMap('blue') });
    serverOptions = testServerOptions(
      { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
      { box: new SecretBox(randomBytes(32)), gitPollIntervalMs: 300, adminPassword: ADMIN_PASSWORD },
    );
    server = await startFleetServer(serverOptions);
    admin = server.adminToken!;
    client = new FleetClient({ server: server.url, token: admin });
    env = { XDG_CONFIG_HOME: path.join(dir, 'config'), GANTRY_SERVER: server.url, GANTRY_TOKEN: admin };
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    for (const name of ALL_WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name, tags: { ring: RINGS[name], rollouts: 'on' } });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(name) };
      agents.push(
        startAgent(pushedAgentOptions({ ...options, dataDir: path.join(dir, `agent-${name}`), log: log.child({ agent: name }) })),
      );
    }
    await client.createRepository({ url: repo.url });
    receiver = await startHttpServer({ '/hook': { body: 'ok' } });
    await client.setSink('rollouts', { type: 'webhook', url: `${receiver.url}/hook` });
    await client.setRouter('rollouts', { events: ['rollout.update'], filters: [{ regex: '^globalservice/ringed$' }], sinks: ['rollouts'] });
    const rolloutFile = path.join(dir, 'rollout.yaml');
    await writeFile(
      rolloutFile,
      [
        'waves:',
        '  - {name: canary, tags: {ring: canary}}',
        '  - {name: early, clusters: [test-stage]}',
        'soak: 1s',
        'interval: 200ms',
        'onFailure: rollback',
        '',
      ].join('\n'),
    );
    const created = await gantry(
      [
        'globalservice',
        'create',
        'ringed',
        '--tag',
        'rollouts=on',
        '--namespace',
        NS,
        '--repo',
        repo.url,
        '--ref',
        'main',
        '--folder',
        'ringed',
        '--rollout-file',
        rolloutFile,
        '-o',
        'json',
      ],
      { env },
    );
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ rollout: { onFailure: 'rollback', soak: '1s' } });
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`blue on ${name}`, async () => (await color(name)) === 'blue', 60_000);
  }, 180_000);

  /** The admin's browser page, logged in through the form. */
  async function adminPage(): Promise<Page> {
    browser ??= await launchBrowser();
    const page = await openPage(browser, server.url);
    await page.goto('/');
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    return page;
  }

  afterAll(async () => {
    await browser?.close();
    await Promise.all(agents.map((agent) => agent.stop()));
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await charts?.close();
    await receiver?.close();
    for (const name of ALL_WORKLOAD_CLUSTERS)
      await kubectlOn(name, ['delete', 'namespace', NS, CHART_NS, STAGED_NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test('a healthy commit goes wave by wave: canary, then early, then the rest, each after the one before soaked', async () => {
    const commit = await repo.commit({ 'ringed/cm.yaml': configMap('green') });
    const done = await rolloutIs('DONE', commit.slice(0, 12));
    expect(done.waves).toEqual(['canary', 'early', 'rest']);
    expect(done.copies.map((entry) => [entry.cluster, entry.wave, entry.state])).toEqual([
      ['test-dev', 0, 'HEALTHY'],
      ['test-stage', 1, 'HEALTHY'],
      ['test-prod', 2, 'HEALTHY'],
    ]);
    const released = (cluster: WorkloadCluster) => new Date(copy(done, cluster).releasedAt!).getTime();
    // Each wave waited for the one before to be healthy and soak 1 s.
    expect(released('test-stage') - released('test-dev')).toBeGreaterThanOrEqual(1_000);
    expect(released('test-prod') - released('test-stage')).toBeGreaterThanOrEqual(1_000);
    for (const name of ALL_WORKLOAD_CLUSTERS) {
      expect(await color(name)).toBe('green');
      const service = await client.getService(name, 'ringed');
      expect(service.pinned).toBeNull();
      expect(service.revision.commit).toBe(commit);
    }
    expect(done.waitingFor).toEqual([]);
    const cause = `commit ${commit.slice(0, 12)}`;
    // Delivered in the background, each on its own: in any order.
    expect((await notified(done.id, 4)).sort()).toEqual(
      [
        `rollout of ringed (${cause}) started: 3 waves, 3 cluster(s)`,
        `rollout of ringed (${cause}) wave canary done; wave early starts`,
        `rollout of ringed (${cause}) wave early done; wave rest starts`,
        `rollout of ringed (${cause}) done: 3 waves`,
      ].sort(),
    );
  });

  test('a commit that fails on the canary never reaches the later waves, and the canary goes back', async () => {
    const cluster = (name: WorkloadCluster) => engine.clusters.get(workloadKubeConfig(name), workloadKubeConfig(name).getCurrentContext());
    const watches = await Promise.all(
      (['test-stage', 'test-prod'] as const).map((name) =>
        watchWrites(cluster(name), { namespace: NS, labelKey: 'gantry.dev/none', discriminator: 'none' }),
      ),
    );
    let failed: ApiRollout;
    let refusedCommit = '';
    try {
      refusedCommit = await repo.commit({ 'ringed/cm.yaml': refused });
      failed = await rolloutIs('FAILED', refusedCommit.slice(0, 12));
      // The canary back on the revision it ran, pinned there by the rollout.
      await settled('test-dev', 'ringed');
    } finally {
      for (const watch of watches) expect(await watch.stop()).toEqual([]);
    }
    expect(failed.reason).toMatch(/^test-dev\/ringed \(wave canary\): revision \d+ failed: .+; the changed clusters were rolled back$/);
    expect(copy(failed, 'test-dev')).toMatchObject({ state: 'ROLLED_BACK' });
    expect(copy(failed, 'test-stage')).toMatchObject({ state: 'WAITING', releasedAt: null });
    expect(await notified(failed.id, 2)).toContain(`rollout of ringed (commit ${refusedCommit.slice(0, 12)}) FAILED: ${failed.reason}`);
    expect(copy(failed, 'test-prod')).toMatchObject({ state: 'WAITING', releasedAt: null });
    for (const name of ALL_WORKLOAD_CLUSTERS) expect(await color(name)).toBe('green');
    const canary = await client.getService('test-dev', 'ringed');
    expect(canary.pinned?.by).toBe('rollout/ringed');
    // The content is rejected for every copy, so the server's next fetches do not record it and start over.
    const rejections = await client.listRejections();
    expect(
      rejections
        .filter((rejection) => rejection.commit === refusedCommit)
        .map((rejection) => rejection.service?.cluster)
        .sort(),
    ).toEqual([...ALL_WORKLOAD_CLUSTERS].sort());
    await twoMoreFetches();
    const revisions = await client.listRevisions('test-dev', 'ringed');
    expect(revisions.filter((revision) => revision.commit === refusedCommit)).toHaveLength(1);
    expect((await rollout()).id).toBe(failed.id);
    const status = await gantry(['globalservice', 'rollout', 'status', 'ringed'], { env });
    expect(status.stdout).toMatch(/^rollout of ringed \(commit [0-9a-f]{12}\): FAILED: test-dev\/ringed \(wave canary\)/);
    expect(status.stdout).toMatch(/test-stage\/ringed: WAITING rev \d+ \(from \d+, batch 1\)/);

    const page = await adminPage();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Global services' }).click();
    await page.locator('tr[data-globalservice="ringed"]').getByRole('link', { name: 'ringed' }).click();
    const shown = page.getByRole('region', { name: 'Rollout' });
    await shown.locator('.rollout-failed').waitFor();
    await shown.locator('tr[data-copy="test-dev"][data-state="ROLLED_BACK"]').waitFor();
    await shown.locator('tr[data-copy="test-prod"][data-state="WAITING"]').waitFor();
    await shown
      .getByText(/test-dev\/ringed \(wave canary\): revision \d+ failed/)
      .first()
      .waitFor();
    await screenshot(page, 'rollout-failed');
    await page.context().close();
  });

  test('a pause holds through a server restart; resume finishes the rollout', async () => {
    const commit = await repo.commit({ 'ringed/cm.yaml': configMap('amber') });
    const running = await rolloutIs('RUNNING', commit.slice(0, 12));
    const paused = await gantry(['globalservice', 'rollout', 'pause', 'ringed', '-o', 'json'], { env });
    expect(paused.stderr).toBe('');
    expect(JSON.parse(paused.stdout)).toMatchObject({
      id: running.id,
      state: 'PAUSED',
      reason: expect.stringMatching(/^paused by admin at /),
    });

    await server.close();
    server = await startFleetServer({ ...serverOptions, port: Number(new URL(server.url).port) });
    // The canary (released before the pause, or held by it) settles; the restarted server looks at the rollout again.
    await settled('test-dev', 'ringed');
    await server.rollouts.start();
    const held = await rollout();
    expect(held).toMatchObject({ state: 'PAUSED' });
    expect(copy(held, 'test-stage').state).toBe('WAITING');
    expect(copy(held, 'test-prod').state).toBe('WAITING');
    expect(await color('test-stage')).toBe('green');
    expect(await color('test-prod')).toBe('green');

    const page = await adminPage();
    await page.goto('/globalservices/ringed');
    const shown = page.getByRole('region', { name: 'Rollout' });
    await shown.locator('.rollout-paused').waitFor();
    await shown
      .getByRole('list', { name: 'Waiting for' })
      .getByText(/^PAUSED: paused by admin at /)
      .waitFor();
    await screenshot(page, 'rollout-paused');
    await shown.getByRole('button', { name: 'Resume' }).click();
    await shown.locator('.rollout-done').waitFor();
    for (const name of ALL_WORKLOAD_CLUSTERS) await shown.locator(`tr[data-copy="${name}"][data-state="HEALTHY"]`).waitFor();
    await screenshot(page, 'rollout-done');
    await page.context().close();
    await rolloutIs('DONE', commit.slice(0, 12));
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`amber on ${name}`, async () => (await color(name)) === 'amber', 60_000);
  });

  test('bad rollouts are refused naming the field; a reader may not pause one', async () => {
    const bad = await apiCall(server, 'PATCH', '/v1/globalservices/ringed', admin, {
      rollout: { waves: [{ name: 'canary', tags: { ring: 'canary' } }], soak: 'a while', onFailure: 'pause' },
    });
    expect(bad).toMatchObject({ status: 400, body: { field: 'body.rollout.soak' } });
    const nothing = await apiCall(server, 'PATCH', '/v1/globalservices/ringed', admin, {
      rollout: { waves: [{ name: 'canary' }], soak: '1s', onFailure: 'pause' },
    });
    expect(nothing).toMatchObject({ status: 400, body: { field: 'body.rollout.waves[0]' } });
    const reader = await userToken({ url: server.url, adminToken: admin }, 'rita', 'reader', 'all');
    expect((await apiCall(server, 'POST', '/v1/globalservices/ringed/rollout/pause', reader)).status).toBe(403);
    expect(await apiCall(server, 'GET', '/v1/globalservices/ringed/rollout', reader)).toMatchObject({
      status: 200,
      body: { state: 'DONE' },
    });
  });

  test('chart versions go wave by wave; one that fails on the canary goes back and is not recorded again', async () => {
    charts = await startChartRepository();
    const chart = (version: string, template = configMapTemplate('charted')): TestChart => ({
      name: 'hello',
      version,
      files: { 'templates/cm.yaml': template },
    });
    const chartVersion = async (cluster: WorkloadCluster) =>
      (
        await kubectlJsonOn<{ data: Record<string, string> }>(cluster, ['get', 'configmap', 'charted', '-n', CHART_NS]).catch(
          () => undefined,
        )
      )?.data['chartVersion'];
    const chartRollout = (state: ApiRollout['state'], version: string) =>
      waitFor(
        `the rollout of chart ${version} ${state}`,
        async () => {
          const found = await client.getRollout('charted').catch(() => undefined);
          return found?.state === state && found.cause === `chart hello ${version}` ? found : undefined;
        },
        90_000,
      );
    await charts.publish(chart('1.0.0'));
    await client.createGlobalService({
      name: 'charted',
      tags: { rollouts: 'on' },
      template: { name: 'charted', namespace: CHART_NS, helm: { url: charts.url, chart: 'hello', version: '^1.0.0' } },
      rollout: { waves: [{ name: 'canary', tags: { ring: 'canary' } }], soak: '1s', interval: '200ms', onFailure: 'rollback' },
    });
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`1.0.0 on ${name}`, async () => (await chartVersion(name)) === '1.0.0', 60_000);

    await charts.publish(chart('1.1.0'));
    const done = await chartRollout('DONE', '1.1.0');
    const canaryReleased = copy(done, 'test-dev').releasedAt!;
    for (const name of ['test-stage', 'test-prod'] as const) expect(copy(done, name).releasedAt! > canaryReleased).toBe(true);
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`1.1.0 on ${name}`, async () => (await chartVersion(name)) === '1.1.0', 60_000);

    // The API server refuses its ConfigMap (a data value that is no string).
    await charts.publish(chart('1.2.0', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: charted\ndata:\n  chartVersion: 42\n'));
    const failed = await chartRollout('FAILED', '1.2.0');
    expect(copy(failed, 'test-dev')).toMatchObject({ state: 'ROLLED_BACK' });
    expect(copy(failed, 'test-prod')).toMatchObject({ state: 'WAITING', releasedAt: null });
    await settled('test-dev', 'charted');
    await twoMoreFetches();
    expect((await client.getRollout('charted')).id).toBe(failed.id);
    for (const name of ALL_WORKLOAD_CLUSTERS) {
      expect(await chartVersion(name)).toBe('1.1.0');
      const revisions = await client.listRevisions(name, 'charted');
      expect(revisions.filter((revision) => revision.chartVersion === '1.2.0')).toHaveLength(1);
    }
  });

  test('a stage with a rollout gets a promotion wave by wave and records its context once done; one failing there goes back', async () => {
    const staged = async (cluster: WorkloadCluster) =>
      (
        await kubectlJsonOn<{ data: Record<string, string> }>(cluster, ['get', 'configmap', 'staged', '-n', STAGED_NS]).catch(
          () => undefined,
        )
      )?.data.color;
    const first = await repo.commit({ 'staged/cm.yaml.liquid': stagedConfigMap('blue') });
    const source = { namespace: STAGED_NS, repository: repo.url, renderer: { kind: 'raw' as const } };
    await client.createService('test-dev', {
      name: 'staged',
      ...source,
      git: { ref: 'main', folder: 'staged' },
      configuration: { ring: 'dev' },
    });
    for (const [cluster, ring] of [
      ['test-stage', 'early'],
      ['test-prod', 'late'],
    ] as const)
      await client.createService(cluster, { name: 'staged', ...source, git: { ref: first, folder: 'staged' }, configuration: { ring } });
    const target = (cluster: WorkloadCluster) => ({ cluster, name: 'staged', criteria: { cluster: 'test-dev', name: 'staged' } });
    await client.setPipeline('release', {
      stages: [
        { name: 'dev', services: [{ cluster: 'test-dev', name: 'staged' }] },
        {
          name: 'prod',
          services: [target('test-stage'), target('test-prod')],
          rollout: { waves: [{ name: 'early', clusters: ['test-stage'] }], soak: '1s', interval: '200ms', onFailure: 'rollback' },
        },
      ],
      edges: [{ from: 'dev', to: 'prod' }],
    });
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`blue on ${name}`, async () => (await staged(name)) === 'blue', 60_000);
    const stageRollout = (state: ApiRollout['state'], after?: string) =>
      waitFor(
        `the rollout of stage prod ${state}`,
        async () => {
          const found = await client.getStageRollout('release', 'prod').catch(() => undefined);
          return found?.state === state && found.id !== after ? found : undefined;
        },
        90_000,
      );

    const green = await repo.commit({ 'staged/cm.yaml.liquid': stagedConfigMap('green') });
    const done = await stageRollout('DONE');
    expect(done).toMatchObject({ globalService: null, pipeline: { name: 'release', stage: 'prod' }, waves: ['early', 'rest'] });
    const released = (found: ApiRollout, cluster: WorkloadCluster) => new Date(copy(found, cluster).releasedAt!).getTime();
    expect(released(done, 'test-prod') - released(done, 'test-stage')).toBeGreaterThanOrEqual(1_000);
    const prod = await waitFor('the prod stage at a context of the green commit', async () => {
      const stage = (await client.getPipeline('release')).stages[1]!;
      return stage.context?.services.every((service) => service.commit === green) ? stage : undefined;
    });
    // Recorded once the rollout was done, not when test-stage alone had the commit.
    expect(prod.context!.createdAt >= done.updatedAt).toBe(true);
    expect(prod.rolloutStatus).toMatchObject({ id: done.id, state: 'DONE' });
    for (const name of ALL_WORKLOAD_CLUSTERS) await waitFor(`green on ${name}`, async () => (await staged(name)) === 'green', 60_000);

    const prodCluster = engine.clusters.get(workloadKubeConfig('test-prod'), workloadKubeConfig('test-prod').getCurrentContext());
    const watch = await watchWrites(prodCluster, { namespace: STAGED_NS, labelKey: 'gantry.dev/none', discriminator: 'none' });
    let failed: ApiRollout;
    let bad = '';
    try {
      bad = await repo.commit({ 'staged/cm.yaml.liquid': stagedConfigMap('red', true) });
      await waitFor('red on dev', async () => (await staged('test-dev')) === 'red', 60_000);
      failed = await stageRollout('FAILED', done.id);
      await settled('test-stage', 'staged');
    } finally {
      expect(await watch.stop()).toEqual([]);
    }
    expect(failed.reason).toMatch(/^test-stage\/staged \(wave early\): revision \d+ failed: .+; the changed clusters were rolled back$/);
    expect(copy(failed, 'test-prod')).toMatchObject({ state: 'WAITING', releasedAt: null });
    expect(await staged('test-stage')).toBe('green');
    const rejected = (await client.listRejections()).filter((rejection) => rejection.commit === bad);
    expect(rejected.map((rejection) => rejection.service?.cluster).sort()).toEqual(['test-prod', 'test-stage']);
    const status = await gantry(['pipeline', 'rollout', 'status', 'release', 'prod'], { env });
    expect(status.stdout).toMatch(/^rollout of release\/prod \(promotion from dev\): FAILED: test-stage\/staged \(wave early\)/);

    const page = await adminPage();
    await page.goto('/pipelines/release');
    const shown = page.getByRole('region', { name: 'Rollout of stage prod' });
    await shown.locator('.rollout-failed').waitFor();
    await shown.locator('tr[data-copy="test-stage"][data-state="ROLLED_BACK"]').waitFor();
    await shown.locator('tr[data-copy="test-prod"][data-state="WAITING"]').waitFor();
    await screenshot(page, 'pipeline-stage-rollout');
    await page.context().close();

    const badStage = await apiCall(server, 'PUT', '/v1/pipelines/release', admin, {
      stages: [
        { name: 'dev', services: [{ cluster: 'test-dev', name: 'staged' }] },
        {
          name: 'prod',
          services: [target('test-prod')],
          rollout: { waves: [{ name: 'early', clusters: ['test-stage'] }], soak: 'soon', onFailure: 'pause' },
        },
      ],
      edges: [{ from: 'dev', to: 'prod' }],
    });
    expect(badStage).toMatchObject({ status: 400, body: { field: 'body.stages[1].rollout.soak' } });
    const reader = await userToken({ url: server.url, adminToken: admin }, 'rosa', 'reader', 'all');
    expect((await apiCall(server, 'POST', '/v1/pipelines/release/stages/prod/rollout/abort', reader)).status).toBe(403);
    // An approver of another pipeline may not steer this one's rollout.
    const neighbour = await userToken({ url: server.url, adminToken: admin }, 'otto', 'approver', { pipelines: ['other'] });
    expect((await apiCall(server, 'POST', '/v1/pipelines/release/stages/prod/rollout/resume', neighbour)).status).toBe(403);
    expect((await apiCall(server, 'GET', '/v1/pipelines/release/stages/prod/rollout', reader)).body).toMatchObject({ state: 'FAILED' });
    expect((await apiCall(server, 'GET', '/v1/pipelines/release/stages/nowhere/rollout', admin)).status).toBe(404);
  });
});
