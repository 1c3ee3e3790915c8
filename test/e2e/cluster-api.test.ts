/**
 * Cluster API for real, on a management cluster of this file's own (`npm run cluster -- up --capi`): Cluster API's
 * core controllers, built by setup from sigs.k8s.io/cluster-api, turn a `cluster.x-k8s.io` Cluster with a topology
 * into a workload cluster through a ClusterClass whose infrastructure and control plane are the test's local
 * provider (scripts/capi/provider.ts), which starts a real kube-apiserver on this machine. Proven here: the
 * topology's objects, the phases and conditions Cluster API reports, the kubeconfig Secret that reaches the new API
 * server, a version this machine cannot run stalling with its reason, and deletion stopping the cluster.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capiUp } from '../../scripts/capi/capi.ts';
import { workloadClusterName } from '../../scripts/capi/provider.ts';
import { localClusterClass } from '../../scripts/capi/local-class.ts';
import { clusterStatus } from '../../scripts/cluster/cluster.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { KUBERNETES_VERSION } from '../../scripts/setup/tools.ts';
import { run } from '../../src/exec.ts';
import { readinessOf } from '../../src/health/index.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { toYamlDocuments } from '../../src/yaml.ts';
import { waitFor } from '../support/controller.ts';

const MANAGEMENT = clusterLayout('test-capi');
const NS = 'fleet-clusters';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface CapiCluster {
  metadata: { name: string; uid: string };
  spec: { controlPlaneRef?: { kind: string; name: string }; infrastructureRef?: { kind: string; name: string } };
  status?: { phase?: string; conditions?: Condition[]; initialization?: Record<string, boolean> };
}

async function kubectl(args: readonly string[], input?: string): Promise<string> {
  return (await run('kubectl', ['--kubeconfig', MANAGEMENT.kubeconfig, ...args], input === undefined ? {} : { input })).stdout;
}

async function getCluster(name: string): Promise<CapiCluster | undefined> {
  const text = await kubectl(['get', 'clusters.v1beta2.cluster.x-k8s.io', name, '-n', NS, '-o', 'json', '--ignore-not-found']);
  return text.trim() === '' ? undefined : (JSON.parse(text) as CapiCluster);
}

function conditionOf(cluster: CapiCluster | undefined, type: string): Condition | undefined {
  return cluster?.status?.conditions?.find((condition) => condition.type === type);
}

function topologyCluster(name: string, version: string) {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: { topology: { classRef: { name: 'local' }, version } },
  };
}

beforeAll(async () => {
  await capiUp({ layout: MANAGEMENT });
  await kubectl(['create', 'namespace', NS]).catch(() => undefined);
  await kubectl(['apply', '--server-side', '-f', '-'], toYamlDocuments(localClusterClass(NS)));
});

afterAll(async () => {
  await kubectl(['delete', 'clusters.v1beta2.cluster.x-k8s.io', '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(() => undefined);
});

describe('Cluster API with the local provider', () => {
  it('provisions a Cluster of a ClusterClass into a real API server, reports its phases, and stops it on deletion', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], toYamlDocuments([topologyCluster('alpha', KUBERNETES_VERSION)]));
    const provisioned = await waitFor(
      async () => {
        const cluster = await getCluster('alpha');
        return cluster?.status?.phase === 'Provisioned' && conditionOf(cluster, 'Available')?.status === 'True' ? cluster : undefined;
      },
      120_000,
      async () => `Cluster alpha Available: ${JSON.stringify((await getCluster('alpha'))?.status)}`,
    );
    // The topology controller made the provider's objects from the class's templates.
    expect(provisioned.spec.controlPlaneRef?.kind).toBe('LocalControlPlane');
    expect(provisioned.spec.infrastructureRef?.kind).toBe('LocalCluster');
    expect(conditionOf(provisioned, 'ControlPlaneAvailable')?.status).toBe('True');
    expect(provisioned.status?.initialization).toMatchObject({ infrastructureProvisioned: true, controlPlaneInitialized: true });
    // Gantry's readiness rules for the kind (src/health/capi-cluster.ts) read Cluster API's real status the same way.
    expect(readinessOf(provisioned as unknown as KubeObject)).toEqual({
      status: 'Ready',
      message: `Provisioned, Kubernetes ${KUBERNETES_VERSION}`,
    });

    // The kubeconfig Secret Cluster API reads reaches the new cluster's own API server.
    const secret = JSON.parse(await kubectl(['get', 'secret', 'alpha-kubeconfig', '-n', NS, '-o', 'json'])) as {
      type: string;
      data: { value: string };
    };
    expect(secret.type).toBe('cluster.x-k8s.io/secret');
    const kubeconfig = Buffer.from(secret.data.value, 'base64').toString();
    const workload = clusterLayout(workloadClusterName(NS, provisioned.spec.controlPlaneRef!.name));
    expect(kubeconfig).toBe(await readFile(workload.kubeconfig, 'utf8'));
    const version = JSON.parse((await run('kubectl', ['--kubeconfig', workload.kubeconfig, 'version', '-o', 'json'])).stdout) as {
      serverVersion: { gitVersion: string };
    };
    expect(version.serverVersion.gitVersion).toBe(KUBERNETES_VERSION);

    await kubectl(['delete', 'clusters.v1beta2.cluster.x-k8s.io', 'alpha', '-n', NS, '--wait=true', '--timeout=120s']);
    expect((await clusterStatus(workload)).state).toBe('stopped');
  });

  it('stalls a Cluster whose version this machine cannot run, naming why', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], toYamlDocuments([topologyCluster('beta', 'v1.30.0')]));
    const stalled = await waitFor(
      async () => {
        const cluster = await getCluster('beta');
        return /VersionNotBuilt|builds Kubernetes/.test(JSON.stringify(conditionOf(cluster, 'ControlPlaneAvailable') ?? {}))
          ? cluster
          : undefined;
      },
      60_000,
      async () => `Cluster beta's ControlPlaneAvailable: ${JSON.stringify((await getCluster('beta'))?.status)}`,
    );
    expect(stalled.status?.phase).not.toBe('Provisioned');
    expect(conditionOf(stalled, 'Available')?.status).not.toBe('True');
    expect(readinessOf(stalled as unknown as KubeObject)).toMatchObject({
      status: 'InProgress',
      message: expect.stringContaining(`ControlPlaneAvailable: this machine builds Kubernetes ${KUBERNETES_VERSION} only`),
    });
  });
});
