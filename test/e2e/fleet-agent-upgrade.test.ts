/**
 * An upgrade of the fleet's agents against two real clusters, test-dev and test-prod, each bootstrapped once with
 * `gantry agent install`: `gantry agent upgrade VERSION --canary dev --wait` moves dev first, then prod, each done once its
 * new agent pinged with the version. An upgrade to a version whose image cannot be pulled fails on the canary: its
 * old agent goes on, the rollout rolls its Deployment back, and prod never sees the broken image. The kubelet's and
 * the Deployment controller's part is test/support/agent-runner.ts (kwok's nodes run no containers).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { GANTRY_VERSION } from '../../src/version.ts';
import { type AgentRunner, runAgentDeployment } from '../support/agent-runner.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { serviceSettled, testServerOptions } from '../support/fleet.ts';
import { kubectlJsonOn, kubectlOn, type WorkloadCluster, workloadKubeConfig, workloadKubeconfig } from '../support/workload-clusters.ts';

const MIRROR = 'registry.invalid/mirror/gantry';
const NEXT = `0.2.0-e2e.${randomBytes(2).toString('hex')}`;
const BROKEN = `0.3.0-broken.${randomBytes(2).toString('hex')}`;
const CLUSTERS: Array<[string, WorkloadCluster]> = [
  ['dev', 'test-dev'],
  ['prod', 'test-prod'],
];

describe("an upgrade of the fleet's agents", () => {
  let dir: string;
  let server: FleetServer;
  let engine: Engine;
  let admin: FleetClient;
  let env: Record<string, string>;
  const runners = new Map<string, AgentRunner>();
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-agent-upgrade-'));
    server = await startFleetServer(
      testServerOptions({ databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log }, { agentImage: MIRROR }),
    );
    admin = new FleetClient({ server: server.url, token: server.adminToken! });
    env = { GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken! };
    engine = new Engine(testConfig());
    for (const [name, workload] of CLUSTERS) {
      const { deployToken } = await admin.createCluster({ name });
      const kubeconfig = workloadKubeconfig(workload);
      const install = await gantry(
        [
          'agent',
          'install',
          '--server',
          server.url,
          '--token',
          deployToken,
          '--kubeconfig',
          kubeconfig,
          '-y',
          '--image',
          `${MIRROR}:${GANTRY_VERSION}`,
        ],
        { env: { KUBECONFIG: kubeconfig } },
      );
      expect(install.code).toBe(0);
      const runner = runAgentDeployment({
        cluster: name,
        kubeConfig: workloadKubeConfig(workload),
        engine,
        pullable: new Set([GANTRY_VERSION, NEXT]),
        dataDir: path.join(dir, name),
        log,
      });
      runners.set(name, runner);
      // The runner's first agent pings as the install's Deployment, which makes its service.
      await waitFor(`the agent service of ${name}`, () => admin.getService(name, 'gantry-agent').catch(() => undefined), 30_000);
      await serviceSettled(admin, name, 'gantry-agent', 1);
    }
  });

  afterAll(async () => {
    await Promise.all([...runners.values()].map((runner) => runner.stop()));
    await engine?.close();
    await server?.close();
    for (const [, workload] of CLUSTERS) {
      await kubectlOn(workload, ['delete', 'namespace', 'gantry-agent', '--ignore-not-found', '--wait=false']);
      await kubectlOn(workload, ['delete', 'clusterrolebinding', 'gantry-agent-cluster-admin', '--ignore-not-found']);
    }
    await rm(dir, { recursive: true, force: true });
  });

  const image = async (workload: WorkloadCluster) =>
    (
      await kubectlJsonOn<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(workload, [
        'get',
        'deployment',
        'gantry-agent',
        '-n',
        'gantry-agent',
      ])
    ).spec.template.spec.containers[0]!.image;

  test('`gantry agent upgrade VERSION --canary dev --wait`: dev first, then prod, each done once its new agent pinged', async () => {
    const run = await gantry(['agent', 'upgrade', NEXT, '--canary', 'dev', '--timeout', '60s', '--wait', '-o', 'json'], {
      env,
    });
    expect(run.stderr).toContain(`rollout of the agents to ${NEXT}: RUNNING, wave canary`);
    expect(run.code).toBe(0);
    const rollout = JSON.parse(run.stdout) as { state: string; waves: string[]; copies: Array<{ cluster: string; state: string }> };
    expect(rollout).toMatchObject({ state: 'DONE', waves: ['canary', 'rest'] });
    expect(rollout.copies.map((copy) => [copy.cluster, copy.state])).toEqual([
      ['dev', 'HEALTHY'],
      ['prod', 'HEALTHY'],
    ]);
    const startedAt = (name: string) => runners.get(name)!.started.find((entry) => entry.version === NEXT)!.at;
    expect(startedAt('dev')).toBeLessThan(startedAt('prod'));
    for (const [name, workload] of CLUSTERS) {
      expect(runners.get(name)!.running()).toBe(NEXT);
      expect(await image(workload)).toBe(`${MIRROR}:${NEXT}`);
    }
    const listed = await gantry(['cluster', 'list', '-o', 'json'], { env });
    expect(
      (JSON.parse(listed.stdout) as Array<{ agentVersion: string; wantedAgentVersion: string }>).map((c) => [
        c.agentVersion,
        c.wantedAgentVersion,
      ]),
    ).toEqual([
      [NEXT, NEXT],
      [NEXT, NEXT],
    ]);
  });

  // The timeout outlasts the Deployment's minReadySeconds, so dev's Deployment is ready (kwok's pods) and what is
  // missing is the new agent's ping.
  test('a version whose image cannot be pulled fails on the canary and is rolled back by itself; prod never sees it', async () => {
    const run = await gantry(['agent', 'upgrade', BROKEN, '--canary', 'dev', '--timeout', '15s', '--wait', '-o', 'json'], {
      env,
    });
    expect(run.code).toBe(1);
    const rollout = JSON.parse(run.stdout) as { state: string; reason: string };
    expect(rollout.state).toBe('FAILED');
    expect(rollout.reason).toContain(
      `dev/gantry-agent (wave canary): not healthy 15s after its release: it is running agent ${NEXT}, not ${BROKEN}`,
    );
    // The old agent went on, and put its own Deployment back.
    expect(runners.get('dev')!.running()).toBe(NEXT);
    // The rollback is a revision of its own (rev 1: bootstrap, 2: NEXT, 3: BROKEN, 4: back to 2), pinned.
    const back = await serviceSettled(admin, 'dev', 'gantry-agent', 4);
    expect(back).toMatchObject({ pinned: { by: 'rollout/@agents' }, revision: { message: 'rollout failed: back to revision 2' } });
    expect(await image('test-dev')).toBe(`${MIRROR}:${NEXT}`);
    expect(await image('test-prod')).toBe(`${MIRROR}:${NEXT}`);
    expect(runners.get('prod')!.started.map((entry) => entry.version)).not.toContain(BROKEN);
    const clusters = await admin.listClusters();
    expect(clusters.map((cluster) => [cluster.name, cluster.agentVersion, cluster.wantedAgentVersion])).toEqual([
      ['dev', NEXT, NEXT],
      ['prod', NEXT, NEXT],
    ]);
  });
});
