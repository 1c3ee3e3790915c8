/**
 * The agents the server keeps, through the API as agents, admins and other users drive it: an agent running as the
 * install's Deployment gets its service gantry-agent at the wanted version, a pin revises it at once, skew shows in
 * the cluster and the metric; and what a leaked token, a scoped user or a careless request may not do with it.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extract } from 'tar';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DATABASE_KINDS } from '../../test/support/databases.ts';
import { apiCall, serverWithClusters, type ServerWithClusters, userToken } from '../../test/support/fleet.ts';
import { capturedLogger } from '../controller/test-support.ts';
import type { KubeObject } from '../kube/object.ts';
import { GANTRY_VERSION } from '../version.ts';
import { parseYamlDocuments } from '../yaml.ts';
import type { FleetServer } from './server.ts';

const IMAGE = 'registry.example.com/mirror/gantry';
const DEPLOYMENT = { server: 'https://gantry.example.com', tokenSecret: 'gantry-agent/gantry-agent-token' };

describe.each(DATABASE_KINDS)('agents the server keeps, on %s', (kind) => {
  let fleet: ServerWithClusters;
  let dir: string;
  let server: FleetServer;
  let admin: string;
  let tokens: Record<string, string>;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    fleet = await serverWithClusters(kind, ['kept', 'beside', 'neighbour', 'race'], { log }, { agentImage: IMAGE });
    ({ server, admin, tokens } = fleet);
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-kept-agents-'));
  });

  afterAll(async () => {
    await fleet?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const ping = (cluster: string, extra: Record<string, unknown> = {}) =>
    apiCall(server, 'POST', '/v1/agent/ping', tokens[cluster]!, { kubernetesVersion: '1.35.4', agentVersion: GANTRY_VERSION, ...extra });
  const agentServices = async (cluster: string) => (await apiCall(server, 'GET', '/v1/agent/services', tokens[cluster]!)).body as any[];
  const pin = (cluster: string, version: unknown, token = admin) =>
    apiCall(server, 'PUT', `/v1/clusters/${cluster}/agent-version`, token, { version });
  const revisions = async (cluster: string) =>
    (await apiCall(server, 'GET', `/v1/clusters/${cluster}/services/gantry-agent/revisions`, admin)).body as any[];

  /** The objects of the agent service's current tarball, as its agent downloads them. */
  async function tarballObjects(cluster: string): Promise<KubeObject[]> {
    const [service] = await agentServices(cluster);
    const response = await fetch(`${server.url}/v1/agent/services/${service.id}/tarball?digest=${service.revision.digest}`, {
      headers: { authorization: `Bearer ${tokens[cluster]}` },
    });
    expect(response.status).toBe(200);
    const target = await mkdtemp(path.join(dir, 'tarball-'));
    const file = path.join(target, 'source.tar.gz');
    await writeFile(file, Buffer.from(await response.arrayBuffer()));
    await extract({ file, cwd: target });
    const text = await readFile(path.join(target, 'agent.yaml'), 'utf8');
    return parseYamlDocuments(text, 'agent.yaml') as KubeObject[];
  }

  test("a ping from the install's Deployment makes its agent service at the server's version; one from a process beside the cluster none", async () => {
    expect((await ping('beside')).status).toBe(200);
    expect(await agentServices('beside')).toEqual([]);

    expect((await ping('kept', { deployment: DEPLOYMENT })).status).toBe(200);
    const [service] = await agentServices('kept');
    expect(service).toMatchObject({
      name: 'gantry-agent',
      namespace: 'gantry-agent',
      renderer: { kind: 'raw' },
      agent: { image: `${IMAGE}:${GANTRY_VERSION}`, ...DEPLOYMENT },
      deleting: false,
    });
    const shown = await apiCall(server, 'GET', '/v1/clusters/kept/services/gantry-agent', admin);
    expect(shown.body).toMatchObject({ protect: true, agent: { image: `${IMAGE}:${GANTRY_VERSION}` }, revision: { number: 1 } });

    const objects = await tarballObjects('kept');
    expect(objects.map((object) => `${object.kind}/${object.metadata.name}`).sort()).toEqual([
      'ClusterRoleBinding/gantry-agent-cluster-admin',
      'Deployment/gantry-agent',
      'Secret/gantry-agent-token',
      'ServiceAccount/gantry-agent',
    ]);
    const deployment = objects.find((object) => object.kind === 'Deployment') as any;
    const [container] = deployment.spec.template.spec.containers;
    expect(container.image).toBe(`${IMAGE}:${GANTRY_VERSION}`);
    expect(container.args).toEqual(expect.arrayContaining(['--server', DEPLOYMENT.server, '--token-secret', DEPLOYMENT.tokenSecret]));
    // The Secret is owned, its token left to the agent: no data an apply would put back over a rotated token.
    const secret = objects.find((object) => object.kind === 'Secret') as any;
    expect(Object.keys(secret).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(JSON.stringify(objects)).not.toContain(tokens['kept']);
    for (const object of objects) expect(object.metadata.annotations).toEqual({ 'kluctl.io/force-apply': 'true' });

    // The cluster is held at the version its agent service was made at: a server of another version does not move it.
    expect((await apiCall(server, 'GET', '/v1/clusters/kept', admin)).body).toMatchObject({
      agentVersionPin: GANTRY_VERSION,
      wantedAgentVersion: GANTRY_VERSION,
    });
    expect((await apiCall(server, 'GET', '/v1/clusters/beside', admin)).body.agentVersionPin).toBeNull();

    // The same ping again changes nothing.
    await ping('kept', { deployment: DEPLOYMENT });
    expect((await revisions('kept')).length).toBe(1);
  });

  test('a pin revises the agent service at once; skew shows in the cluster and the metric until the agent runs it; unpinning goes back', async () => {
    const pinned = await pin('kept', '0.2.0-rc.1');
    expect(pinned.status).toBe(200);
    expect(pinned.body).toMatchObject({ agentVersionPin: '0.2.0-rc.1', wantedAgentVersion: '0.2.0-rc.1', agentVersion: GANTRY_VERSION });
    const [service] = await agentServices('kept');
    expect(service.agent.image).toBe(`${IMAGE}:0.2.0-rc.1`);
    expect(service.revision.number).toBe(2);
    expect((await revisions('kept'))[0]).toMatchObject({ number: 2, createdBy: 'gantry', message: 'agent 0.2.0-rc.1' });
    expect(await skewMetric()).toBe(1);

    await ping('kept', { agentVersion: '0.2.0-rc.1', deployment: DEPLOYMENT });
    expect(await skewMetric()).toBe(0);
    expect((await revisions('kept')).length).toBe(2);

    const unpinned = await pin('kept', null);
    expect(unpinned.body).toMatchObject({ agentVersionPin: null, wantedAgentVersion: GANTRY_VERSION });
    expect((await agentServices('kept'))[0].agent.image).toBe(`${IMAGE}:${GANTRY_VERSION}`);
    expect(await skewMetric()).toBe(1);
    await ping('kept', { deployment: DEPLOYMENT });
    expect(await skewMetric()).toBe(0);

    // A cluster without an agent service is pinned all the same; its agent gets the version once it runs as the Deployment.
    expect((await pin('beside', '0.3.0')).body.wantedAgentVersion).toBe('0.3.0');
    expect(await agentServices('beside')).toEqual([]);
    await pin('beside', null);
  });

  async function skewMetric(): Promise<number> {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const line = text.split('\n').find((candidate) => candidate.startsWith('gantry_fleet_agent_version_skew '));
    return Number(line?.split(' ')[1]);
  }

  test('a version that is no image tag is refused naming the field; only admins pin, not agents or scoped writers', async () => {
    for (const version of ['', '../0.2.0', '0.2.0 latest', '-rc', 'x'.repeat(129), 'a:b', 'a/b', 7]) {
      const refused = await pin('kept', version);
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('version');
    }
    expect((await pin('kept', '0.2.0', tokens['kept'])).status).toBe(401);
    const writer = await userToken(server, `writer-${kind}`, 'writer', { clusters: ['kept'] });
    expect((await pin('kept', '0.2.0', writer)).status).toBe(403);
    expect((await pin('nowhere', '0.2.0')).status).toBe(404);
    expect((await apiCall(server, 'PUT', '/v1/clusters/kept/agent-version', admin, { version: '0.2.0', image: 'evil/x' })).status).toBe(
      400,
    );
    expect((await apiCall(server, 'GET', '/v1/clusters/kept', admin)).body.wantedAgentVersion).toBe(GANTRY_VERSION);
  });

  test('nobody changes the agent service by hand or takes its name; a ping cannot name its image or a bad Secret', async () => {
    const base = '/v1/clusters/kept/services/gantry-agent';
    for (const [method, url, body] of [
      ['PATCH', base, { protect: false }],
      ['DELETE', base, undefined],
      ['DELETE', `${base}?detach=true`, undefined],
      ['POST', `${base}/rollback`, { revision: 1 }],
      ['POST', `${base}/release`, undefined],
      ['POST', `${base}/revisions/1/reject`, { reason: 'no' }],
    ] as const) {
      const refused = await apiCall(server, method, url, admin, body);
      expect({ method, url, status: refused.status }).toEqual({ method, url, status: 409 });
      expect(refused.body.message).toContain('gantry cluster agent-version kept');
    }
    const named = await apiCall(server, 'POST', '/v1/clusters/beside/services', admin, {
      name: 'gantry-agent',
      namespace: 'x',
      helm: { url: 'https://charts.example.com', chart: 'x', version: '1.0.0' },
    });
    expect(named).toMatchObject({ status: 400, body: { field: 'body.name' } });
    const global = await apiCall(server, 'POST', '/v1/globalservices', admin, {
      name: 'agents',
      tags: {},
      template: { name: 'gantry-agent', namespace: 'x', helm: { url: 'https://charts.example.com', chart: 'x', version: '1.0.0' } },
    });
    expect(global).toMatchObject({ status: 400, body: { field: 'body.template.name' } });

    for (const deployment of [
      { ...DEPLOYMENT, image: 'evil.example.com/gantry:1' },
      { ...DEPLOYMENT, server: 'file:///etc/passwd' },
      { ...DEPLOYMENT, server: 'https://gantry.example.com\nx' },
      { ...DEPLOYMENT, tokenSecret: 'gantry-agent/../kube-system' },
      { ...DEPLOYMENT, tokenSecret: 'no-namespace' },
      { server: DEPLOYMENT.server },
    ]) {
      expect((await ping('kept', { deployment })).status).toBe(400);
    }
    expect((await agentServices('kept'))[0].agent).toEqual({ image: `${IMAGE}:${GANTRY_VERSION}`, ...DEPLOYMENT });
    // A ping with one cluster's token keeps that cluster's agent only.
    expect(await agentServices('neighbour')).toEqual([]);
  });

  test('two pings at once make one agent service', async () => {
    const answers = await Promise.all([ping('race', { deployment: DEPLOYMENT }), ping('race', { deployment: DEPLOYMENT })]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect((await agentServices('race')).map((service) => service.name)).toEqual(['gantry-agent']);
  });
});
