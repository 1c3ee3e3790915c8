/**
 * Two agents of one cluster at once, as a rolling upgrade's old and new pods run them (`gantry agent run
 * --leader-elect`), against a real server and the local cluster: only the Lease's holder works; when it stops, the
 * other takes over, on the token its Secret holds now (the leader rotated it first, and the old token has ended), and
 * a commit still arrives.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AGENT_FIELD_MANAGER } from '../../src/agent/agent-state.ts';
import type { RunningAgent } from '../../src/agent/agent.ts';
import { startElectedAgent } from '../../src/agent/leader-election.ts';
import { secretTokenStore } from '../../src/agent/token-store.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { kubectl, kubectlJson } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, serviceSettled, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { configMapYaml } from '../support/manifests.ts';

const NS = `agent-lease-${randomBytes(3).toString('hex')}`;
const OVERLAP_MS = 1_500;

describe('two agents of one cluster with --leader-elect', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  const candidates = new Map<string, RunningAgent>();
  const { log, lines } = capturedLogger('info');
  const kubeConfig = loadKubeConfig({});

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-agent-lease-'));
    repo = await createRepo({ 'app/configmap.yaml': configMapYaml('app', 'one') });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log },
        { gitPollIntervalMs: 300, deployTokens: { overlapMs: OVERLAP_MS, maxAgeMs: 0 } },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    await client.createRepository({ url: repo.url });
    engine = new Engine(testConfig());
    await kubectl(['create', 'namespace', NS]);
  });

  afterAll(async () => {
    await Promise.all([...candidates.values()].map((candidate) => candidate.stop()));
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await rm(dir, { recursive: true, force: true });
  });

  const leaders = () => lines.filter((line) => line['msg'] === 'leading: the agent starts').map((line) => line['candidate'] as string);
  const holder = async () =>
    (await kubectlJson<{ spec: { holderIdentity?: string } }>(['get', 'lease', 'gantry-agent', '-n', NS])).spec.holderIdentity ?? '';

  test('only the holder works; when it stops, the other takes over on the rotated token and a commit arrives', async () => {
    const { deployToken } = await client.createCluster({ name: 'pair' });
    await kubectl(['create', 'secret', 'generic', 'agent-token', '-n', NS, `--from-literal=token=${deployToken}`]);
    const cluster = engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext());
    for (const name of ['a', 'b']) {
      const options = pushedAgentOptions(
        { server: server.url, token: deployToken, engine, kubeConfig, dataDir: path.join(dir, name), log: log.child({ candidate: name }) },
        { tokenStore: secretTokenStore(cluster, `${NS}/agent-token`, AGENT_FIELD_MANAGER), pingIntervalMs: 300 },
      );
      candidates.set(name, startElectedAgent(options, { namespace: NS, name: 'gantry-agent' }));
    }
    await client.createService('pair', {
      name: 'app',
      namespace: NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'app' },
      renderer: { kind: 'raw' },
    });
    await serviceSettled(client, 'pair', 'app', 1);
    const [leader, ...others] = leaders();
    expect(others).toEqual([]);
    const standby = leader === 'a' ? 'b' : 'a';
    expect(await holder()).not.toBe('');
    // The standby neither synced nor pinged: every line of the agent's work is the leader's.
    const workOf = (name: string) => lines.filter((line) => line['candidate'] === name && line['msg'] === 'synced');
    expect(workOf(leader!).length).toBeGreaterThan(0);
    expect(workOf(standby)).toEqual([]);

    // The leader rotates the token into the Secret, then stops (its pod goes); the old token ends.
    expect((await apiCall(server, 'POST', '/v1/clusters/pair/token-rotation', server.adminToken!)).status).toBe(200);
    await waitFor('the rotation', async () => {
      const found = await client.getCluster('pair');
      return (found.deployTokenCreatedAt ?? '') > found.tokenRotationRequestedAt!;
    });
    await candidates.get(leader!)!.stop();
    candidates.delete(leader!);
    await waitFor(
      'the old token to end',
      async () => (await apiCall(server, 'GET', '/v1/agent/cluster', deployToken)).status === 401,
      10_000,
    );

    await waitFor('the standby to take over', () => leaders().includes(standby), 20_000);
    await repo.commit({ 'app/configmap.yaml': configMapYaml('app', 'two') });
    await serviceSettled(client, 'pair', 'app', 2);
    expect((await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', 'app', '-n', NS])).data['value']).toBe('two');
    expect(workOf(standby).length).toBeGreaterThan(0);
  });
});
