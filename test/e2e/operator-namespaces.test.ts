/**
 * Cross-namespace references of the operator (issue 39 §4), from a tenant's side: a ServiceDeployment in the
 * tenant's namespace names a Cluster and a Secret in the victim's namespace. The operator's reconcile runs once per
 * case against the real management cluster and a real server (SQLite), without a running operator's cluster-wide
 * watch, so other tests' resources are left alone. Refused by default, with a condition naming the field and the
 * namespace; followed with --allow-cross-namespace-refs.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FLEET_GROUP, FLEET_VERSION } from '../../src/api/fleet.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger } from '../../src/controller/test-support.ts';
import { Cluster } from '../../src/kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../../src/kube/client.ts';
import { reconcileFleetObject } from '../../src/operator/fleet-object.ts';
import { OPERATOR_FIELD_MANAGER } from '../../src/operator/operator.ts';
import { allowCrossNamespaceRefs } from '../../src/operator/references.ts';
import { serviceDeploymentKind } from '../../src/operator/service-deployment.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { toYaml } from '../../src/yaml.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import { testServerOptions } from '../support/fleet.ts';

const suffix = randomBytes(3).toString('hex');
const TENANT = `tenant-${suffix}`;
const VICTIM = `victim-${suffix}`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

describe('operator references across namespaces', () => {
  let dir: string;
  let server: FleetServer;
  let client: FleetClient;
  const { log } = capturedLogger('info');
  const apply = (manifests: unknown[]) => kubectl(['apply', '-f', '-'], manifests.map((m) => toYaml(m)).join('---\n'));
  const cluster = (name: string, namespace: string) => ({
    apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`,
    kind: 'Cluster',
    metadata: { name, namespace },
    spec: { handle: name },
  });
  const serviceDeployment = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`,
    kind: 'ServiceDeployment',
    metadata: { name, namespace: TENANT },
    spec: { namespace: 'app', ...spec },
  });

  /** One reconcile of the tenant's ServiceDeployment through `through`; its Synchronized condition after. */
  async function reconcileOnce(name: string, through: Cluster): Promise<Condition | undefined> {
    const object = await through.get({ group: FLEET_GROUP, version: FLEET_VERSION, kind: 'ServiceDeployment', namespace: TENANT, name });
    await reconcileFleetObject(serviceDeploymentKind(client, through), object!, {
      cluster: through,
      client,
      fieldManager: OPERATOR_FIELD_MANAGER,
      resource: { group: FLEET_GROUP, version: FLEET_VERSION, kind: 'ServiceDeployment' },
      log,
      statusIntervalMs: 60_000,
    });
    const read = await kubectlJson<{ status?: { conditions?: Condition[] } }>([
      'get',
      'servicedeployments.deployments.gantry.dev',
      name,
      '-n',
      TENANT,
    ]);
    return read.status?.conditions?.find((condition) => condition.type === 'Synchronized');
  }

  /** A Cluster resource synced to the server's cluster `name`: its status holds the server's id. */
  async function syncedCluster(name: string, namespace: string): Promise<void> {
    const created = await client.createCluster({ name });
    await apply([cluster(name, namespace)]);
    await kubectl([
      'patch',
      'clusters.deployments.gantry.dev',
      name,
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { id: created.cluster.id } }),
    ]);
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-operator-ns-'));
    await gantry(['operator', 'install-crds']);
    for (const namespace of [TENANT, VICTIM]) await kubectl(['create', 'namespace', namespace]);
    server = await startFleetServer(
      testServerOptions({ databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log }),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    await syncedCluster(`victim-cluster-${suffix}`, VICTIM);
    await syncedCluster(`tenant-cluster-${suffix}`, TENANT);
    await kubectl(['create', 'secret', 'generic', 'db-creds', '-n', VICTIM, '--from-literal=password=victim-secret']);
  });

  afterAll(async () => {
    for (const namespace of [TENANT, VICTIM]) {
      const names = await kubectl([
        'get',
        'servicedeployments.deployments.gantry.dev,clusters.deployments.gantry.dev',
        '-n',
        namespace,
        '-o',
        'name',
      ]).catch(() => '');
      for (const name of names.split('\n').filter(Boolean))
        await kubectl(['patch', name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);
      await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=false']);
    }
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a clusterRef into another namespace is refused by default, with a condition naming the field and namespace', async () => {
    await apply([
      serviceDeployment('borrow-cluster', {
        clusterRef: { name: `victim-cluster-${suffix}`, namespace: VICTIM },
        helm: { url: 'https://charts.invalid', chart: 'c', version: '1.0.0' },
      }),
    ]);
    const condition = await reconcileOnce('borrow-cluster', new Cluster(new KubeClient(loadKubeConfig({}))));
    expect(condition).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(condition!.message).toContain(`spec.clusterRef.namespace ${VICTIM}`);
    expect(condition!.message).toContain('cross-namespace references are refused');
    expect(await client.listServices()).toEqual([]);
  });

  test("a configurationRef to another namespace's Secret is refused; its value reaches no service", async () => {
    await apply([
      serviceDeployment('borrow-secret', {
        clusterRef: { name: `tenant-cluster-${suffix}` },
        configurationRef: { name: 'db-creds', namespace: VICTIM },
        helm: { url: 'https://charts.invalid', chart: 'c', version: '1.0.0' },
      }),
    ]);
    const condition = await reconcileOnce('borrow-secret', new Cluster(new KubeClient(loadKubeConfig({}))));
    expect(condition).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(condition!.message).toContain(`spec.configurationRef.namespace ${VICTIM}`);
    expect(await client.listServices()).toEqual([]);
  });

  test("a cluster handle (Plural's `cluster`) reaches only the namespace's own Clusters, as a clusterRef does", async () => {
    const spec = { helm: { url: 'https://charts.invalid', chart: 'c', version: '1.0.0' } };
    await apply([
      serviceDeployment('borrow-handle', { cluster: `victim-cluster-${suffix}`, ...spec }),
      serviceDeployment('no-such-handle', { cluster: `nowhere-${suffix}`, ...spec }),
    ]);
    const through = new Cluster(new KubeClient(loadKubeConfig({})));
    const borrowed = await reconcileOnce('borrow-handle', through);
    expect(borrowed).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(borrowed!.message).toBe(
      `spec.cluster victim-cluster-${suffix} is a Cluster of another namespace: a handle names a Cluster resource of this resource's namespace ${TENANT} (the operator runs without --allow-cross-namespace-refs)`,
    );
    expect(await reconcileOnce('no-such-handle', through)).toMatchObject({ status: 'False', reason: 'Waiting' });
    expect(await client.listServices()).toEqual([]);
    // The tenant's own cluster, by its handle: past the check (the chart URL is what the server refuses then).
    await apply([serviceDeployment('own-handle', { cluster: `tenant-cluster-${suffix}`, ...spec })]);
    expect((await reconcileOnce('own-handle', through))?.message ?? '').not.toContain('handle');
  });

  test('with --allow-cross-namespace-refs the same references are followed', async () => {
    const allowed = new Cluster(new KubeClient(loadKubeConfig({})));
    allowCrossNamespaceRefs(allowed);
    const condition = await reconcileOnce('borrow-secret', allowed);
    // Past both references: what stops it now is the chart URL the server cannot reach, no namespace.
    expect(condition?.message ?? '').not.toContain('cross-namespace');
    expect(condition?.reason).not.toBe('Waiting');
    const handle = await reconcileOnce('borrow-handle', allowed);
    expect(handle?.message ?? '').not.toContain('namespace');
    expect(handle?.reason).not.toBe('Waiting');
  });
});
