/**
 * The fleet shows the cluster's state (issue 43, part 5): objects of a service deleted or edited with kubectl on a
 * workload cluster are reported as drift within seconds and repaired within seconds, by the agent's watch of its own
 * objects, not by its periodic rounds (here every 10 minutes, health included); a service asking for detection only
 * is reported and left alone; with the server away the repair still happens and the report arrives when it is back;
 * a field another manager keeps taking is reported as a conflict after three repairs, not fought over.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import type { AgentOptions } from '../../src/agent/agent-state.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { configMapYaml, webDeploymentYaml } from '../support/manifests.ts';
import { kubectlJsonOn, kubectlOn, workloadKubeConfig } from '../support/workload-clusters.ts';

const suffix = randomBytes(3).toString('hex');
const HEALED = `drift-healed-${suffix}`;
const WATCHED = `drift-watched-${suffix}`;
const FOUGHT = `drift-fought-${suffix}`;
const EDITED = `drift-edited-${suffix}`;
const LONG = 600_000;

const configMap = (value: string) => configMapYaml('settings', value);
const deployment = webDeploymentYaml();

interface Component {
  kind: string;
  name: string;
  state: string;
  synced: boolean;
  drift?: { state: string; fields: string[]; managers: string[] };
}
interface Service {
  status: string;
  components: Component[];
}

describe('drift on a workload cluster', () => {
  let dir: string;
  let server: FleetServer;
  let serverPort: number;
  let box: SecretBox;
  let repo: TestRepo;
  let engine: Engine;
  let agent: RunningAgent;
  let adminToken: string;
  const { log, lines } = capturedLogger('info');

  const startServer = async (port: number) =>
    await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { box, port, gitPollIntervalMs: 300 },
      ),
    );

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-drift-'));
    box = new SecretBox(randomBytes(32));
    repo = await createRepo({ 'app/configmap.yaml': configMap('one'), 'app/deployment.yaml': deployment });
    server = await startServer(0);
    serverPort = Number(new URL(server.url).port);
    adminToken = server.adminToken!;
    const made = await apiCall(server, 'POST', '/v1/clusters', adminToken, { name: 'dev' });
    await apiCall(server, 'POST', '/v1/repositories', adminToken, { url: repo.url });
    // The agent's own engine configuration: the watched cache of the objects it labels.
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    const options: AgentOptions = pushedAgentOptions(
      {
        server: server.url,
        token: made.body.deployToken,
        engine,
        kubeConfig: workloadKubeConfig('test-dev'),
        dataDir: path.join(dir, 'agent'),
        log,
      },
      // Nothing periodic within the test: what happens within seconds comes from the watch.
      { healthIntervalMs: LONG, repairBackoffMs: 300 },
    );
    agent = startAgent(options);
    for (const [name, syncConfig] of [
      [HEALED, undefined],
      [WATCHED, { selfHeal: false }],
      [FOUGHT, undefined],
      [EDITED, undefined],
    ] as const) {
      const created = await apiCall(server, 'POST', '/v1/clusters/dev/services', adminToken, {
        name,
        namespace: name,
        repository: repo.url,
        git: { ref: 'main', folder: 'app' },
        ...(syncConfig ? { syncConfig } : {}),
      });
      expect(created.status).toBe(201);
    }
    for (const name of [HEALED, WATCHED, FOUGHT, EDITED])
      await waitFor(`${name} healthy`, async () => (await service(name)).status === 'healthy', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await kubectlOn('test-dev', ['delete', 'namespace', HEALED, WATCHED, FOUGHT, EDITED, '--ignore-not-found', '--wait=false']).catch(
      () => undefined,
    );
    await rm(dir, { recursive: true, force: true });
  });

  async function service(name: string): Promise<Service> {
    const { status, body } = await apiCall(server, 'GET', `/v1/clusters/dev/services/${name}`, adminToken);
    if (status !== 200) throw new Error(`GET service ${name}: ${status} ${JSON.stringify(body)}`);
    return body as Service;
  }

  const component = async (name: string, kind: string) => (await service(name)).components.find((c) => c.kind === kind);
  const live = (namespace: string, kind: string, name: string) =>
    kubectlJsonOn<{ metadata: { uid: string; resourceVersion: string }; data?: Record<string, string> }>('test-dev', [
      'get',
      kind,
      name,
      '-n',
      namespace,
    ]).catch(() => undefined);
  /** The CLI's environment: its login goes to the test's folder. */
  const env = () => ({ XDG_CONFIG_HOME: path.join(dir, 'config') });
  const repairsOf = (name: string) => lines.filter((line) => line.msg === 'repairing drift' && line.service === name).length;

  test('a deleted Deployment and ConfigMap are put back within seconds, and the service is healthy again', async () => {
    const before = { deployment: (await live(HEALED, 'deployment', 'web'))!, configMap: (await live(HEALED, 'configmap', 'settings'))! };
    await kubectlOn('test-dev', ['delete', 'deployment/web', 'configmap/settings', '-n', HEALED]);
    const started = Date.now();
    const back = await waitFor(
      'both objects recreated',
      async () => {
        const [deployment, configMap] = await Promise.all([live(HEALED, 'deployment', 'web'), live(HEALED, 'configmap', 'settings')]);
        return deployment && configMap ? { deployment, configMap } : undefined;
      },
      15_000,
    );
    expect(back.deployment.metadata.uid).not.toBe(before.deployment.metadata.uid);
    expect(back.configMap.metadata.uid).not.toBe(before.configMap.metadata.uid);
    expect(back.configMap.data).toEqual({ value: 'one' });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(repairsOf(HEALED)).toBeGreaterThanOrEqual(1);
    const healed = await waitFor('healthy again, no drift left', async () => {
      const found = await service(HEALED);
      return found.status === 'healthy' && found.components.every((c) => c.drift === undefined && c.synced) ? found : undefined;
    });
    expect(healed.components.map((c) => `${c.kind}:${c.state}`).sort()).toEqual(['ConfigMap:RUNNING', 'Deployment:RUNNING']);
  });

  test('an edited field is put back within seconds', async () => {
    await kubectlOn('test-dev', ['patch', 'configmap', 'settings', '-n', HEALED, '-p', '{"data":{"value":"edited"}}']);
    await waitFor('the value put back', async () => (await live(HEALED, 'configmap', 'settings'))?.data?.['value'] === 'one', 15_000);
  });

  test('with selfHeal false, a deletion and an edit are reported within seconds (field and manager named) and left as they are', async () => {
    await kubectlOn('test-dev', ['patch', 'configmap', 'settings', '-n', WATCHED, '-p', '{"data":{"value":"edited"}}']);
    const changed = await waitFor('the edit reported', async () => {
      const found = await component(WATCHED, 'ConfigMap');
      return found?.drift ? found : undefined;
    });
    expect(changed).toMatchObject({ synced: false, drift: { state: 'CHANGED', fields: ['data.value'], managers: ['kubectl-patch'] } });
    expect((await service(WATCHED)).status).toBe('stale');

    await kubectlOn('test-dev', ['delete', 'deployment', 'web', '-n', WATCHED]);
    const missing = await waitFor('the deletion reported', async () => {
      const found = await component(WATCHED, 'Deployment');
      return found?.drift ? found : undefined;
    });
    expect(missing).toMatchObject({ state: 'PENDING', synced: false, drift: { state: 'MISSING' } });
    expect(await live(WATCHED, 'deployment', 'web')).toBeUndefined();
    expect((await live(WATCHED, 'configmap', 'settings'))?.data?.['value']).toBe('edited');
    expect(repairsOf(WATCHED)).toBe(0);

    // The CLI says the same, in text and in JSON.
    expect((await gantry(['login', '--server', server.url, '--token', adminToken], { env: env() })).code).toBe(0);
    const text = await gantry(['service', 'get', WATCHED, '--cluster', 'dev'], { env: env() });
    expect(text.stdout).toMatch(/ConfigMap\s+\S+\s+settings\s+RUNNING\s+no\s+CHANGED data\.value by kubectl-patch/);
    expect(text.stdout).toMatch(/Deployment\s+\S+\s+web\s+PENDING\s+no\s+MISSING/);
    const json = JSON.parse(
      (await gantry(['service', 'get', WATCHED, '--cluster', 'dev', '-o', 'json'], { env: env() })).stdout,
    ) as Service;
    expect(json.components.find((c) => c.kind === 'Deployment')?.drift).toEqual({ state: 'MISSING', fields: [], managers: [] });
  });

  test('with the server away, drift is repaired; the report of what happened meanwhile arrives when it is back', async () => {
    await server.close();
    await kubectlOn('test-dev', ['delete', 'configmap', 'settings', '-n', HEALED]);
    await waitFor('repaired without the server', async () => (await live(HEALED, 'configmap', 'settings')) !== undefined, 15_000);
    await kubectlOn('test-dev', ['delete', 'configmap', 'settings', '-n', WATCHED]);
    // The agent's look at the edit ends in a report it cannot deliver yet.
    const undelivered = lines.length;
    await waitFor('the report kept for later', () =>
      lines.slice(undelivered).some((line) => line.msg === 'report not delivered; will retry'),
    );

    server = await startServer(serverPort);
    await waitFor(
      'the deletion made while away reported',
      async () => (await component(WATCHED, 'ConfigMap'))?.drift?.state === 'MISSING',
      15_000,
    );
    expect((await service(HEALED)).status).toBe('healthy');
  });

  test('a field another controller took over is left to it and reported as a conflict, not fought over', async () => {
    const rival = async (value: string) =>
      await kubectlOn(
        'test-dev',
        ['apply', '--server-side', '--force-conflicts', '--field-manager=rival', '-n', FOUGHT, '-f', '-'],
        configMap(value),
      );
    await rival('rival');
    const conflict = await waitFor(
      'the conflict reported',
      async () => {
        const found = await component(FOUGHT, 'ConfigMap');
        return found?.drift?.state === 'CONFLICT' ? found : undefined;
      },
      15_000,
    );
    expect(conflict.drift).toEqual({ state: 'CONFLICT', fields: ['data.value'], managers: ['rival'] });
    // One apply found the conflict and gave the field up (Kluctl's rule for fields other controllers own).
    expect(repairsOf(FOUGHT)).toBe(1);
    // The rival's next change is no drift; a repair of another object of the service applies the ConfigMap again,
    // and the field stays the rival's.
    await rival('rival again');
    await kubectlOn('test-dev', ['delete', 'deployment', 'web', '-n', FOUGHT]);
    await waitFor('the Deployment repaired', async () => (await live(FOUGHT, 'deployment', 'web')) !== undefined, 15_000);
    expect(repairsOf(FOUGHT)).toBe(2);
    expect((await live(FOUGHT, 'configmap', 'settings'))?.data?.['value']).toBe('rival again');
    await waitFor('the conflict still reported', async () => (await component(FOUGHT, 'ConfigMap'))?.drift?.state === 'CONFLICT');
  });

  test('a person editing a field again and again gets it taken back three times, then a conflict is reported and repairs stop', async () => {
    const edit = async (value: string) =>
      await kubectlOn('test-dev', ['patch', 'configmap', 'settings', '-n', EDITED, '-p', JSON.stringify({ data: { value } })]);
    const before = repairsOf(EDITED);
    for (let round = 1; round <= 3; round++) {
      await edit(`edit ${round}`);
      await waitFor(`repair ${round}`, async () => (await live(EDITED, 'configmap', 'settings'))?.data?.['value'] === 'one', 15_000);
    }
    await edit('edit 4');
    const conflict = await waitFor(
      'the conflict reported',
      async () => {
        const found = await component(EDITED, 'ConfigMap');
        return found?.drift?.state === 'CONFLICT' ? found : undefined;
      },
      15_000,
    );
    expect(conflict.drift).toEqual({ state: 'CONFLICT', fields: ['data.value'], managers: ['kubectl-patch'] });
    expect(repairsOf(EDITED) - before).toBe(3);
    expect((await live(EDITED, 'configmap', 'settings'))?.data?.['value']).toBe('edit 4');
  });

  test('a new revision is applied over held repairs, which start afresh', async () => {
    await repo.commit({ 'app/configmap.yaml': configMap('two') });
    await waitFor('the new revision applied', async () => (await live(EDITED, 'configmap', 'settings'))?.data?.['value'] === 'two', 30_000);
    await waitFor('no conflict left', async () => (await component(EDITED, 'ConfigMap'))?.drift === undefined);
    await kubectlOn('test-dev', ['delete', 'configmap', 'settings', '-n', EDITED]);
    await waitFor('repaired again', async () => (await live(EDITED, 'configmap', 'settings'))?.data?.['value'] === 'two', 15_000);
  });

  test('gantry service update --no-self-heal turns repairs off, keeping the rest of syncConfig', async () => {
    const updated = await gantry(['service', 'update', EDITED, '--cluster', 'dev', '--no-self-heal', '-o', 'json'], { env: env() });
    expect(updated.code).toBe(0);
    expect((JSON.parse(updated.stdout) as { syncConfig?: unknown }).syncConfig).toEqual({ selfHeal: false });
    await waitFor('the update applied', async () => {
      const found = (await apiCall(server, 'GET', `/v1/clusters/dev/services/${EDITED}`, adminToken)).body as Service & {
        appliedRevision: number;
        revision: { number: number };
      };
      return found.status === 'healthy' && found.appliedRevision === found.revision.number;
    });
    await kubectlOn('test-dev', ['delete', 'configmap', 'settings', '-n', EDITED]);
    await waitFor('the deletion reported', async () => (await component(EDITED, 'ConfigMap'))?.drift?.state === 'MISSING');
    expect(await live(EDITED, 'configmap', 'settings')).toBeUndefined();
  });
});
