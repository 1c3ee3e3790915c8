/**
 * Clusters Cluster API makes, through the API as admins and the management cluster's agent drive it: the cluster is
 * registered with its spec, the management cluster gets the protected service holding the Cluster API Cluster, the
 * agent's report of that object is the provisioning status; and what a careless request or a scoped user may not do.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extract } from 'tar';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DATABASE_KINDS } from '../../test/support/databases.ts';
import { apiCall, serverWithClusters, type ServerWithClusters, userToken } from '../../test/support/fleet.ts';
import { createRepo } from '../../test/support/git-repo.ts';
import { capiClusterManifests } from '../capi/cluster-manifests.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { GANTRY_VERSION } from '../version.ts';
import { parseYamlDocuments } from '../yaml.ts';
import { provisioningServiceName, provisioningStatusOf } from './provisioned-clusters.ts';
import type { FleetServer } from './server.ts';

describe('the Cluster API objects of a cluster', () => {
  test('are a Cluster with a managed topology of the class, labelled with the fleet cluster', () => {
    const [cluster] = capiClusterManifests({
      cluster: 'edge-1',
      management: 'mgmt',
      namespace: 'clusters',
      class: 'aws-eks',
      version: 'v1.35.4',
      controlPlaneReplicas: 3,
      workers: [{ class: 'default-worker', name: 'md-0', replicas: 2 }],
      variables: { region: 'eu-west-1', tags: { team: 'edge' } },
    });
    expect(cluster).toEqual({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: 'edge-1', namespace: 'clusters', labels: { 'gantry.dev/cluster': 'edge-1' } },
      spec: {
        topology: {
          classRef: { name: 'aws-eks' },
          version: 'v1.35.4',
          controlPlane: { replicas: 3 },
          workers: { machineDeployments: [{ class: 'default-worker', name: 'md-0', replicas: 2 }] },
          variables: [
            { name: 'region', value: 'eu-west-1' },
            { name: 'tags', value: { team: 'edge' } },
          ],
        },
      },
    });
  });

  test('live in a service named after the cluster, a name of at most 63 characters that no two clusters share', () => {
    expect(provisioningServiceName('edge-1')).toBe('capi-edge-1');
    const long = `c${'x'.repeat(62)}`;
    const other = `c${'x'.repeat(61)}y`;
    expect(provisioningServiceName(long)).toHaveLength(63);
    expect(provisioningServiceName(long)).toMatch(/^capi-cx+-[0-9a-f]{8}$/);
    expect(provisioningServiceName(long)).not.toBe(provisioningServiceName(other));
  });

  test("have the provisioning status their agent's report gives, WAITING before it", () => {
    expect(provisioningStatusOf('edge-1', 'capi-edge-1', undefined)).toMatchObject({
      state: 'WAITING',
      message: expect.stringContaining('no service capi-edge-1'),
    });
    const service = { name: 'capi-edge-1', errors: [], components: [] } as never;
    expect(provisioningStatusOf('edge-1', 'capi-edge-1', service)).toMatchObject({ state: 'WAITING' });
    const failing = {
      name: 'capi-edge-1',
      errors: [{ source: 'sync', message: 'no matches for kind "Cluster"' }],
      components: [],
    } as never;
    expect(provisioningStatusOf('edge-1', 'capi-edge-1', failing).message).toBe('sync error: no matches for kind "Cluster"');
    const reported = {
      name: 'capi-edge-1',
      errors: [],
      components: [
        {
          group: 'cluster.x-k8s.io',
          version: 'v1beta2',
          kind: 'Cluster',
          namespace: 'clusters',
          name: 'edge-1',
          state: 'PENDING',
          message: 'Provisioning: InfrastructureReady: not yet',
          synced: true,
        },
      ],
    } as never;
    expect(provisioningStatusOf('edge-1', 'capi-edge-1', reported)).toEqual({
      service: 'capi-edge-1',
      state: 'PENDING',
      message: 'Provisioning: InfrastructureReady: not yet',
    });
  });
});

describe.each(DATABASE_KINDS)('clusters Cluster API makes, on %s', (kind) => {
  let fleet: ServerWithClusters;
  let dir: string;
  let server: FleetServer;
  let admin: string;
  let tokens: Record<string, string>;
  const { log } = capturedLogger('info');
  const spec = { management: 'mgmt', class: 'local', version: 'v1.35.4', namespace: 'clusters' };

  beforeAll(async () => {
    fleet = await serverWithClusters(kind, ['mgmt', 'other'], { log });
    ({ server, admin, tokens } = fleet);
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-provisioned-'));
  });

  afterAll(async () => {
    await fleet?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const agentServices = async (cluster: string) => (await apiCall(server, 'GET', '/v1/agent/services', tokens[cluster]!)).body as any[];
  /** The management agent's report of the service holding edge's objects: its Cluster in `state`, with `message`. */
  const reportCluster = async (state: string, message?: string) => {
    const [service] = (await agentServices('mgmt')).filter((each) => each.name === 'capi-edge');
    const component = {
      group: 'cluster.x-k8s.io',
      version: 'v1beta2',
      kind: 'Cluster',
      namespace: 'clusters',
      name: 'edge',
      state,
      synced: true,
    };
    return await apiCall(server, 'POST', `/v1/agent/services/${service.id}/report`, tokens['mgmt']!, {
      revisionId: service.revision.id,
      errors: [],
      components: [{ ...component, ...(message === undefined ? {} : { message }) }],
    });
  };

  test("registering one hands its Cluster API Cluster to the management cluster's agent, and the agent's report is its status", async () => {
    const created = await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'edge', tags: { tier: 'edge' }, provisioning: spec });
    expect(created.status).toBe(201);
    expect(created.body.cluster).toMatchObject({ name: 'edge', provisioning: spec, health: 'UNKNOWN' });

    const [service] = (await agentServices('mgmt')).filter((each) => each.name === 'capi-edge');
    expect(service).toMatchObject({ namespace: 'clusters' });
    expect(await agentServices('other')).toEqual([]);
    const response = await fetch(`${server.url}/v1/agent/services/${service.id}/tarball?digest=${service.revision.digest}`, {
      headers: { authorization: `Bearer ${tokens['mgmt']}` },
    });
    const target = await mkdtemp(path.join(dir, 'tarball-'));
    await writeFile(path.join(target, 'source.tar.gz'), Buffer.from(await response.arrayBuffer()));
    await extract({ file: path.join(target, 'source.tar.gz'), cwd: target });
    const objects = parseYamlDocuments(await readFile(path.join(target, 'capi-cluster.yaml'), 'utf8'), 'capi-cluster.yaml');
    expect(objects).toEqual(capiClusterManifests({ ...spec, cluster: 'edge' }));

    const status = async () => (await apiCall(server, 'GET', '/v1/clusters/edge', admin)).body.provisioningStatus;
    expect(await status()).toMatchObject({ service: 'capi-edge', state: 'WAITING' });
    expect((await reportCluster('PENDING', 'Provisioning: ControlPlaneAvailable: not yet')).status).toBeLessThan(300);
    expect(await status()).toEqual({ service: 'capi-edge', state: 'PENDING', message: 'Provisioning: ControlPlaneAvailable: not yet' });
    await reportCluster('RUNNING');
    expect(await status()).toEqual({ service: 'capi-edge', state: 'RUNNING', message: 'available' });
    const listed = (await apiCall(server, 'GET', '/v1/clusters', admin)).body as any[];
    expect(listed.find((cluster) => cluster.name === 'edge').provisioningStatus.state).toBe('RUNNING');
    expect(listed.find((cluster) => cluster.name === 'mgmt').provisioningStatus).toBeUndefined();
  });

  test('the management agent alone takes install tokens, each revoking the one before it, until the new agent pinged', async () => {
    const install = (token: string, cluster = 'edge') =>
      apiCall(server, 'POST', `/v1/agent/provisioned-clusters/${cluster}/agent-install`, token);
    const first = await install(tokens['mgmt']!);
    expect(first).toMatchObject({ status: 201, body: { image: `ghcr.io/gantry-dev/gantry:${GANTRY_VERSION}`, server: null } });
    const second = await install(tokens['mgmt']!);
    expect(second.status).toBe(201);
    const ping = (token: string) =>
      apiCall(server, 'POST', '/v1/agent/ping', token, { kubernetesVersion: '1.35.4', agentVersion: GANTRY_VERSION });
    // An install that crashed half-way leaves no working token behind.
    expect((await ping(first.body.deployToken)).status).toBe(401);
    expect((await install(tokens['other']!)).status).toBe(404);
    expect((await install(tokens['mgmt']!, 'other')).status).toBe(404);
    expect((await install(tokens['mgmt']!, 'nowhere')).status).toBe(404);
    expect((await install(admin)).status).toBe(401);
    expect((await ping(second.body.deployToken)).status).toBe(200);
    expect((await install(tokens['mgmt']!)).status).toBe(409);
  });

  test('deleting a cluster Cluster API made hands its objects to the management agent for deletion; its management cluster stays while it makes one', async () => {
    await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'doomed', provisioning: spec });
    const held = await apiCall(server, 'DELETE', '/v1/clusters/mgmt', admin);
    expect(held.status).toBe(409);
    expect(held.body.message).toBe('cluster mgmt makes doomed, edge through Cluster API: delete them first');
    expect((await apiCall(server, 'DELETE', '/v1/clusters/doomed', admin)).status).toBe(204);
    const [service] = (await agentServices('mgmt')).filter((each) => each.name === 'capi-doomed');
    expect(service).toMatchObject({ deleting: true, provisions: 'doomed' });
    expect((await apiCall(server, 'GET', '/v1/clusters/doomed', admin)).status).toBe(404);
  });

  test('a report cannot carry a component message longer than the API allows', async () => {
    const long = await reportCluster('PENDING', 'x'.repeat(1001));
    expect(long.status).toBe(400);
  });

  test('a bad spec is refused naming the field, and leaves nothing registered', async () => {
    const attempt = (provisioning: Record<string, unknown>, name = 'bad') =>
      apiCall(server, 'POST', '/v1/clusters', admin, { name, provisioning: { ...spec, ...provisioning } });
    expect(await attempt({ management: 'nowhere' })).toMatchObject({ status: 400, body: { field: 'body.provisioning.management' } });
    expect(await attempt({ management: 'bad' })).toMatchObject({ status: 400, body: { field: 'body.provisioning.management' } });
    expect((await attempt({ version: '1.35' })).status).toBe(400);
    expect((await attempt({ class: 'Not_A_Name' })).status).toBe(400);
    expect((await attempt({ workers: [{ class: 'w', name: 'md', replicas: -1 }] })).status).toBe(400);
    expect((await attempt({ extra: true })).status).toBe(400);
    expect((await apiCall(server, 'GET', '/v1/clusters/bad', admin)).status).toBe(404);
  });

  test("a management cluster's service of the same name keeps the name, and the new cluster is not registered", async () => {
    const repo = await createRepo({ 'app/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {}\n' });
    try {
      expect((await apiCall(server, 'POST', '/v1/repositories', admin, { url: repo.url })).status).toBe(201);
      const taken = await apiCall(server, 'POST', '/v1/clusters/mgmt/services', admin, {
        name: 'capi-taken',
        namespace: 'default',
        repository: repo.url,
        git: { ref: 'main', folder: 'app' },
      });
      expect(taken.status).toBe(201);
      const conflict = await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'taken', provisioning: spec });
      expect(conflict.status).toBe(409);
      expect((await apiCall(server, 'GET', '/v1/clusters/taken', admin)).status).toBe(404);
    } finally {
      await repo.remove();
    }
  });

  test("the objects' service is the server's, and only admins make clusters", async () => {
    const writer = await userToken(server, `capi-writer-${kind}`, 'writer', { clusters: ['mgmt'] });
    for (const token of [admin, writer]) {
      const changed = await apiCall(server, 'PATCH', '/v1/clusters/mgmt/services/capi-edge', token, { namespace: 'elsewhere' });
      expect(changed.status).toBe(409);
      expect(changed.body.message).toContain('holds the Cluster API objects that make cluster edge');
      expect((await apiCall(server, 'DELETE', '/v1/clusters/mgmt/services/capi-edge', token)).status).toBe(409);
    }
    expect((await apiCall(server, 'POST', '/v1/clusters', writer, { name: 'writers', provisioning: spec })).status).toBe(403);
    const shown = await apiCall(server, 'GET', '/v1/clusters/mgmt/services/capi-edge', writer);
    expect(shown.body).toMatchObject({ provisions: 'edge', protect: true });
  });
});
