/**
 * Upgrades of the fleet's agents through the API, driven as agents and admins drive them: a canary first, then the
 * rest in batches, each cluster done only once its agent pings with the version; a new agent that never pings fails
 * the rollout, and the clusters it changed go back and want their version again; and who may start one.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DATABASE_KINDS } from '../../test/support/databases.ts';
import { apiCall, serverWithClusters, type ServerWithClusters, userToken } from '../../test/support/fleet.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { GANTRY_VERSION } from '../version.ts';
import type { FleetServer } from './server.ts';

const IMAGE = 'registry.example.com/gantry';
const DEPLOYMENT = { server: 'https://gantry.example.com', tokenSecret: 'gantry-agent/gantry-agent-token' };
const CLUSTERS = ['a', 'b', 'c'];

describe.each(DATABASE_KINDS)("upgrades of the fleet's agents on %s", (kind) => {
  let fleet: ServerWithClusters;
  let server: FleetServer;
  let admin: string;
  let tokens: Record<string, string>;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    fleet = await serverWithClusters(kind, CLUSTERS, { log }, { agentImage: IMAGE });
    ({ server, admin, tokens } = fleet);
  });

  afterAll(() => fleet?.close());

  /** The cluster's agent pings as the install's Deployment, running `version`. */
  const ping = (cluster: string, version: string) =>
    apiCall(server, 'POST', '/v1/agent/ping', tokens[cluster]!, {
      kubernetesVersion: '1.35.4',
      agentVersion: version,
      deployment: DEPLOYMENT,
    });
  /** The agent service as the cluster's agent gets it. */
  const agentService = async (cluster: string) => (await apiCall(server, 'GET', '/v1/agent/services', tokens[cluster]!)).body[0];
  /** The agent reports its service's Deployment ready at the revision it got (as kwok's fake pods would have it). */
  async function reportReady(cluster: string): Promise<void> {
    const service = await agentService(cluster);
    const component = {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      namespace: 'gantry-agent',
      name: 'gantry-agent',
      state: 'RUNNING',
      synced: true,
    };
    const reported = await apiCall(server, 'POST', `/v1/agent/services/${service.id}/report`, tokens[cluster]!, {
      revisionId: service.revision.id,
      components: [component],
      errors: [],
    });
    expect(reported.status).toBe(204);
  }
  const start = (body: unknown, token = admin) => apiCall(server, 'POST', '/v1/agents/rollout', token, body);
  const status = async () => (await apiCall(server, 'GET', '/v1/agents/rollout', admin)).body;
  const spec = (progressDeadline: string) => ({
    waves: [{ name: 'canary', clusters: ['a'] }],
    batchSize: 1,
    soak: '0s',
    progressDeadline,
    onFailure: 'rollback',
  });
  const images = async () => Promise.all(CLUSTERS.map(async (cluster) => (await agentService(cluster)).agent.image as string));

  test('with no agent the server keeps there is nothing to upgrade, and no rollout to show', async () => {
    const refused = await start({ version: '0.2.0', rollout: spec('30s') });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('no agent service to upgrade');
    expect((await apiCall(server, 'GET', '/v1/agents/rollout', admin)).status).toBe(404);
  });

  test('a canary first, then one cluster at a time, each done once its agent pings with the version', async () => {
    for (const cluster of CLUSTERS) {
      await ping(cluster, GANTRY_VERSION);
      await reportReady(cluster);
    }
    const started = await start({ version: '0.2.0', rollout: spec('30s') });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ agentVersion: '0.2.0', globalService: null, state: 'RUNNING', waves: ['canary', 'rest'] });
    expect(await images()).toEqual([`${IMAGE}:0.2.0`, `${IMAGE}:${GANTRY_VERSION}`, `${IMAGE}:${GANTRY_VERSION}`]);
    const held = await apiCall(server, 'GET', '/v1/clusters/b/services/gantry-agent', admin);
    expect(held.body).toMatchObject({ pinned: { by: 'rollout/@agents' }, pendingRevision: 2, revision: { number: 1 } });

    // Ready is not enough: the canary waits for its new agent's ping.
    await reportReady('a');
    expect((await status()).copies.find((copy: { cluster: string }) => copy.cluster === 'a').state).toBe('RELEASED');
    await ping('a', '0.2.0');
    await waitFor('b released', async () => (await images())[1] === `${IMAGE}:0.2.0`);
    expect((await images())[2]).toBe(`${IMAGE}:${GANTRY_VERSION}`);
    for (const cluster of ['b', 'c']) {
      await waitFor(`${cluster} released`, async () => (await agentService(cluster)).agent.image === `${IMAGE}:0.2.0`);
      await reportReady(cluster);
      await ping(cluster, '0.2.0');
    }
    const done = await waitFor('the rollout done', async () => ((await status()).state === 'DONE' ? await status() : undefined));
    expect(done.copies.map((copy: { state: string }) => copy.state)).toEqual(['HEALTHY', 'HEALTHY', 'HEALTHY']);
    const clusters = (await apiCall(server, 'GET', '/v1/clusters', admin)).body as Array<{
      wantedAgentVersion: string;
      agentVersion: string;
    }>;
    expect(clusters.map((cluster) => [cluster.wantedAgentVersion, cluster.agentVersion])).toEqual([
      ['0.2.0', '0.2.0'],
      ['0.2.0', '0.2.0'],
      ['0.2.0', '0.2.0'],
    ]);
  });

  test('a new agent that never pings with the version fails it: the changed clusters go back and want their version again', async () => {
    const started = await start({ version: '0.3.0', rollout: spec('2s') });
    expect(started.status).toBe(201);
    // The canary's Deployment turns ready (its new pod could run), but its new agent never reaches the server.
    await reportReady('a');
    const failed = await waitFor('the rollout to fail', async () => ((await status()).state === 'FAILED' ? await status() : undefined));
    expect(failed.reason).toMatch(
      /^a\/gantry-agent \(wave canary\): not healthy 2s after its release: it is running agent 0\.2\.0, not 0\.3\.0/,
    );
    expect(failed.copies.map((copy: { state: string }) => copy.state)).toEqual(['ROLLED_BACK', 'WAITING', 'WAITING']);
    await waitFor('a back at 0.2.0', async () => (await agentService('a')).agent.image === `${IMAGE}:0.2.0`);
    expect(await images()).toEqual([`${IMAGE}:0.2.0`, `${IMAGE}:0.2.0`, `${IMAGE}:0.2.0`]);
    const clusters = (await apiCall(server, 'GET', '/v1/clusters', admin)).body as Array<{ wantedAgentVersion: string }>;
    expect(clusters.map((cluster) => cluster.wantedAgentVersion)).toEqual(['0.2.0', '0.2.0', '0.2.0']);

    // The old agent's next pings revise nothing: the cluster wants what it runs.
    const revisions = async () => (await apiCall(server, 'GET', '/v1/clusters/a/services/gantry-agent/revisions', admin)).body.length;
    const before = await revisions();
    await ping('a', '0.2.0');
    expect(await revisions()).toBe(before);
    expect((await apiCall(server, 'POST', '/v1/agents/rollout/abort', admin)).status).toBe(409);
  });

  test('only admins start or act on one; a bad version or duration is refused naming the field', async () => {
    const writer = await userToken(server, `writer-${kind}`, 'writer', { clusters: ['a'] });
    expect((await start({ version: '0.4.0', rollout: spec('30s') }, writer)).status).toBe(403);
    expect((await apiCall(server, 'GET', '/v1/agents/rollout', writer)).status).toBe(403);
    expect((await apiCall(server, 'POST', '/v1/agents/rollout/pause', writer)).status).toBe(403);
    expect((await start({ version: '0.4.0', rollout: spec('30s') }, tokens['a'])).status).toBe(401);
    const badVersion = await start({ version: '../0.4.0', rollout: spec('30s') });
    expect(badVersion.status).toBe(400);
    expect(JSON.stringify(badVersion.body)).toContain('version');
    expect(await start({ version: '0.4.0', rollout: spec('soon') })).toMatchObject({
      status: 400,
      body: { field: 'body.rollout.progressDeadline' },
    });
    expect((await status()).agentVersion).toBe('0.3.0');
  });
});
