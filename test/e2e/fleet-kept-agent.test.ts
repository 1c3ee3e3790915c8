/**
 * The agent the server keeps, on the local cluster: bootstrapped once with `gantry agent install`, an agent running
 * as that Deployment (here a process beside the cluster with the Deployment's environment and token Secret; the
 * cluster's kwok nodes run no containers) gets its service gantry-agent, takes the install's objects over, and rolls
 * its Deployment to another image when an admin pins another version with the CLI. Watches prove the token Secret's
 * data is never written, and that a ping with the cluster's token naming another server never reaches the cluster.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AGENT_FIELD_MANAGER } from '../../src/agent/agent-state.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { secretTokenStore } from '../../src/agent/token-store.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import type { Cluster } from '../../src/kube/cluster.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { GANTRY_VERSION } from '../../src/version.ts';
import { gantry, kubectl, kubectlJson, localContext, namespaceGone } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, serviceSettled, testServerOptions } from '../support/fleet.ts';

const NS = 'gantry-agent';
const TOKEN_SECRET = `${NS}/gantry-agent-token`;
const MIRROR = 'registry.invalid/mirror/gantry';
const PINNED = `0.2.0-e2e.${randomBytes(2).toString('hex')}`;

interface DeploymentObject extends KubeObject {
  spec: { template: { spec: { containers: Array<{ image: string; args: string[] }> } } };
}

describe('the agent the server keeps', () => {
  let dir: string;
  let server: FleetServer;
  let engine: Engine;
  let client: FleetClient;
  let cluster: Cluster;
  let token: string;
  let agent: RunningAgent | undefined;
  const events: Array<{ type: string; object: KubeObject }> = [];
  const streams: Readable[] = [];
  const { log } = capturedLogger('info');
  const kubeConfig = loadKubeConfig({});

  beforeAll(async () => {
    // agent-install.test.ts uses the same namespace, and deletes it without waiting.
    const present = await kubectl(['get', 'namespace', '--field-selector', `metadata.name=${NS}`, '-o', 'name']);
    if (present)
      await waitFor(
        'namespace gantry-agent to be gone',
        async () => !(await kubectl(['get', 'namespace', '--field-selector', `metadata.name=${NS}`, '-o', 'name'])),
        120_000,
      );
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-kept-agent-'));
    server = await startFleetServer(
      testServerOptions({ databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log }, { agentImage: MIRROR }),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    engine = new Engine(testConfig());
    cluster = engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext());
    ({ deployToken: token } = await client.createCluster({ name: 'kept' }));
  });

  afterAll(async () => {
    for (const stream of streams) stream.destroy();
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'clusterrolebinding', 'gantry-agent-cluster-admin', '--ignore-not-found']);
    await rm(dir, { recursive: true, force: true });
  });

  /** Streams every later event of the namespace's Deployments and Secrets into `events`. */
  async function watchNamespace(): Promise<void> {
    for (const resource of ['/apis/apps/v1/namespaces/gantry-agent/deployments', '/api/v1/namespaces/gantry-agent/secrets']) {
      const list = await cluster.client.request<{ metadata: { resourceVersion: string } }>('GET', resource);
      const stream = await cluster.client.stream(resource, { query: { watch: '1', resourceVersion: list.metadata.resourceVersion } });
      stream.on('error', () => undefined);
      const lines = createInterface({ input: stream });
      lines.on('error', () => undefined);
      lines.on('line', (line) => events.push(JSON.parse(line) as { type: string; object: KubeObject }));
      streams.push(stream);
    }
  }

  const deployment = () => kubectlJson<DeploymentObject>(['get', 'deployment', 'gantry-agent', '-n', NS]);
  const container = async () => (await deployment()).spec.template.spec.containers[0]!;

  test("bootstrapped once, the agent gets its service at the server's version and takes the install's objects over", async () => {
    const install = await gantry([
      'agent',
      'install',
      '--server',
      server.url,
      '--token',
      token,
      '--context',
      await localContext(),
      '-y',
      '--image',
      'registry.invalid/bootstrap/gantry:0.0.1',
    ]);
    expect(install.code).toBe(0);
    expect((await container()).image).toBe('registry.invalid/bootstrap/gantry:0.0.1');
    await watchNamespace();

    const options = pushedAgentOptions(
      { server: server.url, token, engine, kubeConfig, dataDir: path.join(dir, 'agent'), log },
      {
        tokenStore: secretTokenStore(cluster, TOKEN_SECRET, AGENT_FIELD_MANAGER),
        deployment: { server: server.url, tokenSecret: TOKEN_SECRET },
      },
    );
    agent = startAgent(options);

    // The agent's first ping makes the service.
    await waitFor('the agent service', () => client.getService('kept', 'gantry-agent').catch(() => undefined), 10_000);
    const kept = await serviceSettled(client, 'kept', 'gantry-agent', 1);
    expect(kept).toMatchObject({
      protect: true,
      agent: { image: `${MIRROR}:${GANTRY_VERSION}`, server: server.url, tokenSecret: TOKEN_SECRET },
    });
    const running = await container();
    expect(running.image).toBe(`${MIRROR}:${GANTRY_VERSION}`);
    expect(running.args).toEqual([
      'agent',
      'run',
      '--server',
      server.url,
      '--token-secret',
      TOKEN_SECRET,
      '--data-dir',
      '/var/lib/gantry/agent',
      '--health-addr',
      ':8081',
      '--leader-elect',
    ]);
    // The agent's field manager owns the image now: the next install by hand is a conflict Kluctl's rules resolve, not a silent fight.
    const managed = await kubectlJson<DeploymentObject>(['get', 'deployment', 'gantry-agent', '-n', NS, '--show-managed-fields']);
    const managers = managed.metadata.managedFields?.map((entry) => entry.manager) ?? [];
    expect(managers).toContain(AGENT_FIELD_MANAGER);
  });

  test('`gantry cluster agent-version` rolls the Deployment to the pinned image; the CLI shows the skew; the token is never written', async () => {
    const env = { GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken! };
    const pinned = await gantry(['cluster', 'agent-version', 'kept', PINNED, '-o', 'json'], { env });
    expect(pinned.code).toBe(0);
    expect(JSON.parse(pinned.stdout)).toMatchObject({ agentVersionPin: PINNED, wantedAgentVersion: PINNED });

    await serviceSettled(client, 'kept', 'gantry-agent', 2);
    expect((await container()).image).toBe(`${MIRROR}:${PINNED}`);
    const images = events
      .filter((event) => event.object.kind === 'Deployment')
      .map((event) => (event.object as DeploymentObject).spec.template.spec.containers[0]!.image);
    expect(images).toContain(`${MIRROR}:${PINNED}`);

    const listed = await gantry(['cluster', 'list'], { env });
    expect(listed.stdout).toMatch(new RegExp(`kept .* ${GANTRY_VERSION.replaceAll('.', '\\.')} → ${PINNED.replaceAll('.', '\\.')}`));
    expect((await gantry(['cluster', 'agent-version', 'kept', PINNED, '--unpin'], { env })).code).not.toBe(0);

    // Every event of the token Secret still holds the install's token: the service owns its metadata only.
    const secretEvents = events.filter((event) => event.object.kind === 'Secret' && event.object.metadata.name === 'gantry-agent-token');
    for (const event of secretEvents) expect(Buffer.from((event.object as any).data.token, 'base64').toString()).toBe(token);
  });

  test("a ping with the cluster's token naming another server revises the service, but the agent does not apply it", async () => {
    const evil = { server: 'https://evil.invalid', tokenSecret: TOKEN_SECRET };
    const ping = { kubernetesVersion: '1.35.4', agentVersion: GANTRY_VERSION, deployment: evil };
    expect((await apiCall(server, 'POST', '/v1/agent/ping', token, ping)).status).toBe(200);
    const refused = await waitFor(
      'the agent to refuse its service',
      async () => {
        const service = await client.getService('kept', 'gantry-agent');
        return service.revision.number === 3 && service.errors.some((error) => error.message.includes('is not applied'))
          ? service
          : undefined;
      },
      30_000,
    );
    expect(refused.errors[0]!.message).toContain('names server https://evil.invalid');
    expect((await container()).args).toContain(server.url);
    const servers = events
      .filter((event) => event.object.kind === 'Deployment')
      .flatMap((event) => (event.object as DeploymentObject).spec.template.spec.containers[0]!.args);
    expect(servers).not.toContain('https://evil.invalid');

    // The agent's own next ping (sent here) puts its server back, and it applies that.
    await apiCall(server, 'POST', '/v1/agent/ping', token, { ...ping, deployment: { server: server.url, tokenSecret: TOKEN_SECRET } });
    await serviceSettled(client, 'kept', 'gantry-agent', 4);
  });
});
