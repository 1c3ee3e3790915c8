/**
 * Real agents rotating their deploy tokens against a real server and the local cluster, with no outage: one keeps its
 * token in a file, one in a Secret (as the installed agent does), one in its environment only (which cannot rotate).
 * Each is asked through the CLI or the API; the new token is stored, the old one ends after the overlap, and
 * commits still arrive through the push channel, which the pollers' long interval leaves as the only way.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AGENT_FIELD_MANAGER } from '../../src/agent/agent-state.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { DesiredState } from '../../src/agent/desired-state.ts';
import { fileTokenStore, secretTokenStore, type TokenStore } from '../../src/agent/token-store.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, serviceSettled, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { configMapYaml } from '../support/manifests.ts';

const suffix = randomBytes(3).toString('hex');
const NS = `token-rotation-${suffix}`;
const OVERLAP_MS = 2_000;
const PING = { kubernetesVersion: '1.35.4', agentVersion: '0.0.0-test' };

describe('agents rotating their deploy tokens', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  let adminToken: string;
  const agents: RunningAgent[] = [];
  const { log, lines } = capturedLogger('info');
  const kubeConfig = loadKubeConfig({});

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-token-rotation-'));
    repo = await createRepo({
      'file/configmap.yaml': configMapYaml('file', 'one'),
      'secret/configmap.yaml': configMapYaml('secret', 'one'),
      'env/configmap.yaml': configMapYaml('env', 'one'),
    });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300, deployTokens: { overlapMs: OVERLAP_MS, maxAgeMs: 0 } },
      ),
    );
    adminToken = server.adminToken!;
    client = new FleetClient({ server: server.url, token: adminToken });
    await client.createRepository({ url: repo.url });
    engine = new Engine(testConfig());
    await kubectl(['create', 'namespace', NS]);
  });

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await rm(dir, { recursive: true, force: true });
  });

  /** Registers the cluster, its service of one ConfigMap (folder `name`), and starts its agent pinging every 300 ms. */
  async function agentFor(name: string, store: (token: string) => Promise<TokenStore | undefined>) {
    const { deployToken } = await client.createCluster({ name });
    const tokenStore = await store(deployToken);
    const options = pushedAgentOptions(
      { server: server.url, token: deployToken, engine, kubeConfig, dataDir: path.join(dir, name), log },
      { tokenStore, pingIntervalMs: 300 },
    );
    agents.push(startAgent(options));
    await client.createService(name, {
      name,
      namespace: NS,
      repository: repo.url,
      git: { ref: 'main', folder: name },
      renderer: { kind: 'raw' },
    });
    await serviceSettled(client, name, name, 1);
    return deployToken;
  }

  const ping = (token: string) => apiCall(server, 'POST', '/v1/agent/ping', token, PING);
  const configValue = async (name: string) =>
    (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', name, '-n', NS])).data['value'];

  /** A commit to the service's folder reaches the cluster (through the push channel: the agents poll every 10 minutes). */
  async function commitArrives(name: string, value: string, revision: number) {
    await repo.commit({ [`${name}/configmap.yaml`]: configMapYaml(name, value) });
    await serviceSettled(client, name, name, revision);
    expect(await configValue(name)).toBe(value);
  }

  test('an agent with a token file: `gantry cluster rotate-token --wait`, the file replaced, the old token ended', async () => {
    const file = path.join(dir, 'file-token');
    const old = await agentFor('file', async (token) => {
      await writeFile(file, `${token}\n`, { mode: 0o600 });
      return fileTokenStore(file);
    });

    const env = { GANTRY_SERVER: server.url, GANTRY_TOKEN: adminToken };
    const run = await gantry(['cluster', 'rotate-token', 'file', '--wait', '--timeout', '30s', '-o', 'json'], { env });
    expect(run.stderr).toContain('waiting for the agent of cluster file');
    expect(run.code).toBe(0);
    const rotated = JSON.parse(run.stdout) as { deployTokenCreatedAt: string; tokenRotationRequestedAt: string };
    expect(rotated.deployTokenCreatedAt > rotated.tokenRotationRequestedAt).toBe(true);

    const fresh = (await readFile(file, 'utf8')).trim();
    expect(fresh).toMatch(/^gantry-deploy-/);
    expect(fresh).not.toBe(old);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await ping(fresh)).body.rotateToken).toBe(false);
    await waitFor('the old token to end', async () => (await ping(old)).status === 401, 10_000);
    // Its push channel, had the agent kept it, ends with it.
    await server.channels.checkTokens();

    await commitArrives('file', 'two', 2);
    // The services the agent saved for when the server is away are sealed with the new token now.
    const saved = await new DesiredState(path.join(dir, 'file', 'services.sealed'), fresh).load();
    expect(saved?.map((service) => service.name)).toContain('file');
    const text = lines.map((line) => JSON.stringify(line)).join('\n');
    expect(text).toContain('deploy token rotated');
    expect(text).not.toContain(old.slice(-20));
    expect(text).not.toContain(fresh.slice(-20));
  });

  test('an agent with its token in a Secret stores the new one there, and starts on it again after a restart', async () => {
    const cluster = engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext());
    const secretToken = async () =>
      Buffer.from(
        (await kubectlJson<{ data: { token: string } }>(['get', 'secret', 'agent-token', '-n', NS])).data.token,
        'base64',
      ).toString();
    const old = await agentFor('secret', async (token) => {
      await kubectl(['create', 'secret', 'generic', 'agent-token', '-n', NS, `--from-literal=token=${token}`]);
      return secretTokenStore(cluster, `${NS}/agent-token`, AGENT_FIELD_MANAGER);
    });

    expect((await apiCall(server, 'POST', '/v1/clusters/secret/token-rotation', adminToken)).status).toBe(200);
    const fresh = await waitFor('the new token in the Secret', async () => {
      const stored = await secretToken();
      return stored !== old ? stored : undefined;
    });
    await waitFor('the agent on its new token', async () => {
      const found = await client.getCluster('secret');
      return (found.deployTokenCreatedAt ?? '') > found.tokenRotationRequestedAt! ? found : undefined;
    });
    await waitFor('the old token to end', async () => (await ping(old)).status === 401, 10_000);
    await commitArrives('secret', 'two', 2);

    // A second agent process, as after a restart, reads the Secret through the API: the new token.
    const restarted = secretTokenStore(cluster, `${NS}/agent-token`, AGENT_FIELD_MANAGER);
    expect(await restarted.read()).toBe(fresh);
    expect((await ping(fresh)).status).toBe(200);
  });

  test('an agent whose token is only in its environment says it cannot rotate, and keeps working on the old one', async () => {
    const token = await agentFor('env', async () => undefined);
    const env = { GANTRY_SERVER: server.url, GANTRY_TOKEN: adminToken };
    const waited = await gantry(['cluster', 'rotate-token', 'env', '--wait', '--timeout', '2s'], { env });
    expect(waited.code).not.toBe(0);
    expect(waited.stderr).toMatch(/the agent of cluster env did not rotate its deploy token within 2 s \(last ping: \S+\)/);
    await waitFor('the warning', () => lines.some((line) => String(line['msg']).includes('cannot store a new one')));
    await commitArrives('env', 'two', 2);
    const found = await client.getCluster('env');
    expect((found.deployTokenCreatedAt ?? '') > found.tokenRotationRequestedAt!).toBe(false);
    expect((await ping(token)).status).toBe(200);
  });

  test('bad --token-secret and --token-file values are named, with a non-zero exit', async () => {
    const env = { GANTRY_SERVER: server.url };
    const both = await gantry(['agent', 'run', '--token-file', '/nonexistent', '--token-secret', `${NS}/agent-token`], { env });
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('give --token-file or --token-secret, not both');
    const malformed = await gantry(['agent', 'run', '--token-secret', 'no-slash'], { env });
    expect(malformed.code).not.toBe(0);
    expect(malformed.stderr).toContain('--token-secret must be namespace/name, not "no-slash"');
    const missing = await gantry(['agent', 'run', '--token-secret', `${NS}/absent`], { env });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain(`Secret ${NS}/absent does not exist`);
  });
});
