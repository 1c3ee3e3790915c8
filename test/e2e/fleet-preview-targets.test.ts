/**
 * Previews on every target cluster (issue 43, part 1), on the workload clusters test-dev and test-prod with their
 * agents and a server in this process:
 * - a pipeline dev → prod behind an APPROVAL gate: when dev settles at a new commit, the server has prod's agent
 *   dry-run the pending promotion (prod at dev's commit with dev's copied `version`), and the approver sees the diff on
 *   the edge (API, `gantry pipeline get`, `gantry pipeline preview`) before deciding; a watch proves prod was not
 *   written; a commit whose promotion would change nothing on prod is not offered;
 * - a global service's template edit, previewed on both clusters' copies, with nothing written on either;
 * - a helm service previewed at another chart version;
 * - the neighbouring rights: a reader may not preview a promotion or a template edit.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { type ApiPipeline, FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import type { Cluster } from '../../src/kube/cluster.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { gantry } from '../support/cli.ts';
import { configMapTemplate, startChartRepository } from '../support/chart-server.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions, userToken } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlJsonOn, kubectlOn, WORKLOAD_CLUSTERS, workloadKubeConfig } from '../support/workload-clusters.ts';
import { watchWrites } from '../support/write-watch.ts';

const [DEV, PROD] = WORKLOAD_CLUSTERS;
const NS = `preview-targets-${randomBytes(3).toString('hex')}`;
const plan = (round: number, comment = '') =>
  `${comment}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plan\ndata:\n  round: "${round}"\n  version: "{{ configuration.version }}"\n`;
const shared = (color: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  color: ${color}\n`;

describe('previews on every target cluster', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  let env: Record<string, string>;
  const agents: RunningAgent[] = [];
  const { log } = capturedLogger('info');
  const cluster = (name: (typeof WORKLOAD_CLUSTERS)[number]): Cluster =>
    engine.clusters.get(workloadKubeConfig(name), workloadKubeConfig(name).getCurrentContext());
  const watchNamespace = (name: (typeof WORKLOAD_CLUSTERS)[number], namespace: string) =>
    watchWrites(cluster(name), { namespace, labelKey: 'gantry.dev/none', discriminator: 'none' });

  /** The pipeline once its edge has a preview for dev's context at `commit` that is no longer PENDING. */
  const previewedAt = (commit: string) =>
    waitFor(
      `prod's preview of dev at ${commit.slice(0, 7)}`,
      async () => {
        const found = await client.getPipeline('release');
        const dev = found.stages.find((stage) => stage.name === 'dev')!;
        const preview = found.edges[0]!.previews[0];
        return dev.context?.services[0]?.commit === commit && preview && preview.state !== 'PENDING' ? found : undefined;
      },
      60_000,
    );
  const devHealthyAt = (commit: string) =>
    waitFor(
      `dev healthy at ${commit.slice(0, 7)}`,
      async () => {
        const service = await client.getService(DEV!, 'plan');
        return service.status === 'healthy' && service.revision.commit === commit && service.appliedRevision === service.revision.number;
      },
      60_000,
    );

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-preview-targets-'));
    repo = await createRepo({ 'app/plan.yaml.liquid': plan(1), 'shared/cm.yaml': shared('blue') });
    await repo.branch('stable');
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300 },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    env = { XDG_CONFIG_HOME: path.join(dir, 'config'), GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken! };
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    for (const name of WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name, tags: { previews: 'on' } });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(name) };
      agents.push(
        startAgent(pushedAgentOptions({ ...options, dataDir: path.join(dir, `agent-${name}`), log: log.child({ agent: name }) })),
      );
    }
    await client.createRepository({ url: repo.url });
    const dev = await client.createService(DEV!, {
      name: 'plan',
      namespace: NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'app' },
      configuration: { version: 'v1' },
    });
    // prod at a fixed commit, as a promotion leaves it: only promotions move it.
    await client.createService(PROD!, {
      name: 'plan',
      namespace: NS,
      repository: repo.url,
      git: { ref: dev.revision.commit!, folder: 'app' },
      configuration: { version: 'v0' },
    });
    await client.setPipeline('release', {
      stages: [
        { name: 'dev', services: [{ cluster: DEV!, name: 'plan' }] },
        { name: 'prod', services: [{ cluster: PROD!, name: 'plan', criteria: { cluster: DEV!, name: 'plan', secrets: ['version'] } }] },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'approval', type: 'APPROVAL' }] }],
    });
    for (const name of WORKLOAD_CLUSTERS)
      await waitFor(`plan healthy on ${name}`, async () => (await client.getService(name, 'plan')).status === 'healthy', 60_000);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await engine?.close();
    await server?.close();
    await repo?.remove();
    for (const name of WORKLOAD_CLUSTERS)
      await kubectlOn(name, ['delete', 'namespace', NS, `${NS}-shared`, `${NS}-charted`, '--ignore-not-found', '--wait=false']).catch(
        () => undefined,
      );
    await rm(dir, { recursive: true, force: true });
  });

  test('the approver sees on prod what the promotion would change before deciding, and prod is not written', async () => {
    const prodBefore = await client.getService(PROD!, 'plan');
    const watch = await watchNamespace(PROD!, NS);
    let found: ApiPipeline;
    let commit: string;
    try {
      commit = await repo.commit({ 'app/plan.yaml.liquid': plan(2) });
      await devHealthyAt(commit);
      found = await previewedAt(commit);
    } finally {
      expect(await watch.stop()).toEqual([]);
    }
    const edge = found.edges[0]!;
    expect(edge.promoted).toBe(false);
    expect(edge.gates[0]).toMatchObject({ name: 'approval', state: 'PENDING' });
    expect(edge.previews).toHaveLength(1);
    const preview = edge.previews[0]!;
    expect(preview).toMatchObject({ cluster: PROD, service: 'plan', ref: commit, commit, state: 'DONE' });
    expect(preview.result).toMatchObject({ create: [], delete: [], errors: [] });
    expect(preview.result!.change.map((entry) => entry.object)).toEqual([`${NS}/ConfigMap/plan`]);
    const diff = preview.result!.change[0]!.diff;
    expect(diff).toMatch(/-\s+round: "1"/);
    expect(diff).toMatch(/\+\s+round: "2"/);
    // Rendered with the configuration the promotion copies from dev.
    expect(diff).toMatch(/-\s+version: v0/);
    expect(diff).toMatch(/\+\s+version: v1/);

    const get = await gantry(['pipeline', 'get', 'release'], { env });
    expect(get.stdout).toContain(`preview ${PROD}/plan: DONE: 1 to change`);
    // Asked again, the result is reused: nothing on prod changed since.
    const asked = await gantry(['pipeline', 'preview', 'release', '-o', 'json'], { env });
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toMatchObject([{ id: preview.id, state: 'DONE', cluster: PROD }]);
    const text = await gantry(['pipeline', 'preview', 'release'], { env });
    expect(text.stdout).toContain(`~ ${NS}/ConfigMap/plan`);
    expect((await client.getService(PROD!, 'plan')).revision.number).toBe(prodBefore.revision.number);

    await client.decideGate('release', { from: 'dev', to: 'prod' }, 'approval', 'approve');
    await waitFor(
      'prod at round 2',
      async () => (await kubectlJsonOn<{ data: Record<string, string> }>(PROD!, ['get', 'configmap', 'plan', '-n', NS])).data.round === '2',
      60_000,
    );
  });

  test('a promotion whose preview changes nothing on prod is not offered: it is recorded as nothing to promote', async () => {
    await waitFor('prod healthy at round 2', async () => (await client.getService(PROD!, 'plan')).status === 'healthy', 60_000);
    const prodBefore = await client.getService(PROD!, 'plan');
    // Only a comment changes: a new commit and revision on dev, the same objects.
    const commit = await repo.commit({ 'app/plan.yaml.liquid': plan(2, '# reviewed\n') });
    await devHealthyAt(commit);
    const found = await previewedAt(commit);
    expect(found.edges[0]!.previews[0]).toMatchObject({ state: 'DONE', result: { create: [], change: [], delete: [], errors: [] } });
    const promoted = await waitFor('the edge promoted with nothing', async () => {
      const edge = (await client.getPipeline('release')).edges[0]!;
      return edge.promoted ? edge : undefined;
    });
    expect(promoted.gates[0]).toMatchObject({ state: 'PENDING', decidedBy: null });
    expect((await client.listPromotions('release'))[0]).toMatchObject({ services: [], gates: [] });
    expect((await client.getService(PROD!, 'plan')).revision.number).toBe(prodBefore.revision.number);
  });

  test("a global service's template edit is previewed on every copy's cluster, and neither is written", async () => {
    const template = (ref: string) => ({ name: 'shared', namespace: `${NS}-shared`, repository: repo.url, git: { ref, folder: 'shared' } });
    await client.createGlobalService({ name: 'shared', tags: { previews: 'on' }, template: template('stable') });
    for (const name of WORKLOAD_CLUSTERS)
      await waitFor(`shared healthy on ${name}`, async () => (await client.getService(name, 'shared')).status === 'healthy', 60_000);
    await repo.commit({ 'shared/cm.yaml': shared('green') });
    const file = path.join(dir, 'template.yaml');
    await writeFile(file, JSON.stringify(template('main')));
    const watches = await Promise.all(WORKLOAD_CLUSTERS.map((name) => watchNamespace(name, `${NS}-shared`)));
    let run;
    try {
      run = await gantry(['globalservice', 'preview', 'shared', '--from-file', file, '-o', 'json'], { env });
    } finally {
      for (const watch of watches) expect(await watch.stop()).toEqual([]);
    }
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const previews = JSON.parse(run.stdout) as Array<{ cluster: string; result: { change: Array<{ object: string; diff: string }> } }>;
    expect(previews.map((preview) => preview.cluster).sort()).toEqual([...WORKLOAD_CLUSTERS].sort());
    for (const preview of previews) {
      expect(preview).toMatchObject({ service: 'shared', state: 'DONE', result: { create: [], delete: [], errors: [] } });
      expect(preview.result.change.map((entry) => entry.object)).toEqual([`${NS}-shared/ConfigMap/shared`]);
      expect(preview.result.change[0]!.diff).toMatch(/\+\s+color: green/);
    }
    for (const name of WORKLOAD_CLUSTERS) expect((await client.getService(name, 'shared')).revision.number).toBe(1);
  });

  test('a helm service is previewed at another chart version', async () => {
    const charts = await startChartRepository();
    onTestFinished(() => charts.close());
    const chart = (version: string) => ({ name: 'greeting', version, files: { 'templates/cm.yaml': configMapTemplate('greeting') } });
    await charts.publish(chart('1.0.0'));
    await charts.publish(chart('2.0.0'));
    await client.createService(DEV!, {
      name: 'charted',
      namespace: `${NS}-charted`,
      helm: { url: charts.url, chart: 'greeting', version: '1.0.0' },
    });
    await waitFor('charted healthy', async () => (await client.getService(DEV!, 'charted')).status === 'healthy', 60_000);
    const run = await gantry(['service', 'preview', 'charted', '--cluster', DEV!, '--ref', '2.0.0'], { env });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^preview of test-dev\/charted at 2\.0\.0 \(no git\): DONE$/m);
    expect(run.stdout).toContain(`~ ${NS}-charted/ConfigMap/greeting`);
    expect(run.stdout).toMatch(/\+\s+chartVersion: 2\.0\.0/);
    expect((await client.getService(DEV!, 'charted')).revision.number).toBe(1);
  });

  test('a reader may not preview a promotion or a template edit; an unknown edge is a 404', async () => {
    const reader = await userToken(server, 'rita', 'reader', 'all');
    expect((await apiCall(server, 'POST', '/v1/pipelines/release/edges/dev/prod/previews', reader)).status).toBe(403);
    const template = { name: 'shared', namespace: `${NS}-shared`, repository: repo.url, git: { ref: 'main', folder: 'shared' } };
    expect((await apiCall(server, 'POST', '/v1/globalservices/shared/previews', reader, { template })).status).toBe(403);
    const admin = server.adminToken!;
    expect(await apiCall(server, 'POST', '/v1/pipelines/release/edges/prod/dev/previews', admin)).toMatchObject({
      status: 404,
      body: { message: expect.stringMatching(/no edge prod → dev/) },
    });
  });
});
