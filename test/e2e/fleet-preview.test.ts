/**
 * Previews (issue 43, part 1) on the workload cluster test-dev: the service follows `stable`; a preview of `main`,
 * which changes a ConfigMap, adds one and drops a Deployment, is rendered and dry-run by the service's agent against
 * the live cluster and lists what a sync would create, change (with the diff) and prune. A watch on every resource
 * proves that the preview wrote nothing, and the service's revision does not move. A bad ref is a 400 naming it; a
 * reader may not ask for one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { DISCRIMINATOR_LABEL } from '../../src/render/postprocess.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions, userToken } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlOn, workloadKubeConfig } from '../support/workload-clusters.ts';
import { watchWrites } from '../support/write-watch.ts';
import { configMapYaml, webDeploymentYaml } from '../support/manifests.ts';

const NS = `preview-${randomBytes(3).toString('hex')}`;
const configMap = configMapYaml;
const deployment = webDeploymentYaml();

describe('previews on a workload cluster', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let agent: RunningAgent;
  let admin: string;
  let serviceId: string;
  const { log } = capturedLogger('info');
  const env = () => ({ XDG_CONFIG_HOME: path.join(dir, 'config') });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-preview-'));
    repo = await createRepo({ 'app/settings.yaml': configMap('settings', 'one'), 'app/deployment.yaml': deployment });
    await repo.branch('stable');
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300 },
      ),
    );
    admin = server.adminToken!;
    const made = await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'dev' });
    await apiCall(server, 'POST', '/v1/repositories', admin, { url: repo.url });
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    agent = startAgent(
      pushedAgentOptions({
        server: server.url,
        token: made.body.deployToken,
        engine,
        kubeConfig: workloadKubeConfig('test-dev'),
        dataDir: path.join(dir, 'agent'),
        log,
      }),
    );
    const created = await apiCall(server, 'POST', '/v1/clusters/dev/services', admin, {
      name: 'web',
      namespace: NS,
      repository: repo.url,
      git: { ref: 'stable', folder: 'app' },
    });
    serviceId = created.body.id;
    await waitFor(
      'web healthy',
      async () => (await apiCall(server, 'GET', '/v1/clusters/dev/services/web', admin)).body.status === 'healthy',
      60_000,
    );
    // main moves on: one ConfigMap changed, one added, the Deployment gone.
    await repo.commit({
      'app/settings.yaml': configMap('settings', 'two'),
      'app/extra.yaml': configMap('extra', 'new'),
      'app/deployment.yaml': null,
    });
    expect((await gantry(['login', '--server', server.url, '--token', admin], { env: env() })).code).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await kubectlOn('test-dev', ['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test('the agent dry-runs another ref against the live cluster: what a sync would create, change and prune, and nothing written', async () => {
    const cluster = engine.clusters.get(workloadKubeConfig('test-dev'), workloadKubeConfig('test-dev').getCurrentContext());
    const watch = await watchWrites(cluster, { namespace: NS, labelKey: DISCRIMINATOR_LABEL, discriminator: `gantry-svc-${serviceId}` });
    const before = (await apiCall(server, 'GET', '/v1/clusters/dev/services/web', admin)).body;
    let run;
    try {
      run = await gantry(['service', 'preview', 'web', '--cluster', 'dev', '--ref', 'main'], { env: env() });
    } finally {
      expect(await watch.stop()).toEqual([]);
    }
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^preview of dev\/web at main \([0-9a-f]{12}\): DONE$/m);
    expect(run.stdout).toContain(`+ ${NS}/ConfigMap/extra`);
    expect(run.stdout).toContain(`~ ${NS}/ConfigMap/settings`);
    expect(run.stdout).toMatch(/^ {4}-\s+value: one$/m);
    expect(run.stdout).toMatch(/^ {4}\+\s+value: two$/m);
    expect(run.stdout).toContain(`- ${NS}/Deployment/web`);
    const after = (await apiCall(server, 'GET', '/v1/clusters/dev/services/web', admin)).body;
    expect(after.revision.number).toBe(before.revision.number);
  });

  test('a ref that does not resolve is a 400 naming it; a reader may not ask for a preview', async () => {
    const bad = await apiCall(server, 'POST', '/v1/clusters/dev/services/web/previews', admin, { ref: 'no-such-branch' });
    expect(bad).toMatchObject({ status: 400, body: { field: 'body.ref' } });
    const reader = await userToken(server, 'rita', 'reader', 'all');
    expect((await apiCall(server, 'POST', '/v1/clusters/dev/services/web/previews', reader, { ref: 'main' })).status).toBe(403);
  });
});
