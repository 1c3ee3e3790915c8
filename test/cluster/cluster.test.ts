/**
 * Behaviour of the local cluster that the rest of the test suite relies on, checked against the real thing
 * (brought up by test/global-setup.ts).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { clusterDown, clusterStatus, clusterUp } from '../../scripts/cluster/cluster.ts';
import { clusterLayout, knownClusters } from '../../scripts/cluster/layout.ts';
import { NODE_NAMES } from '../../scripts/cluster/nodes.ts';
import { run } from '../../src/exec.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { toYaml } from '../../src/yaml.ts';

const namespace = `cluster-test-${randomBytes(3).toString('hex')}`;

async function kubectl(args: string[], input?: string): Promise<string> {
  return (await run(join(clusterLayout().bin, 'kubectl'), args, { input })).stdout;
}

async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl(['get', '-o', 'json', ...args])) as T;
}

function apply(object: KubeObject): Promise<string> {
  return kubectl(['apply', '--namespace', namespace, '-f', '-'], toYaml(object));
}

/** A Deployment/Job pod template; the image is never pulled, kwok only pretends to run it. */
function podTemplate(app: string, restartPolicy?: string) {
  return {
    metadata: { labels: { app } },
    spec: { ...(restartPolicy ? { restartPolicy } : {}), containers: [{ name: 'main', image: 'registry.invalid/app:1' }] },
  };
}

interface Condition {
  type: string;
  status: string;
}

beforeAll(async () => {
  await kubectl(['create', 'namespace', namespace]);
});

afterAll(async () => {
  await kubectl(['delete', 'namespace', namespace, '--wait=false']);
});

describe('local cluster', () => {
  test('client and server report Kubernetes v1.35.4', async () => {
    const version = JSON.parse(await kubectl(['version', '-o', 'json'])) as Record<string, { gitVersion: string }>;
    expect(version.clientVersion?.gitVersion).toBe('v1.35.4');
    expect(version.serverVersion?.gitVersion).toBe('v1.35.4');
  });

  test('has two Ready kwok nodes that take ordinary pods', async () => {
    const nodes = await getJson<{ items: Array<KubeObject & { spec: { taints?: unknown[] }; status: { conditions: Condition[] } }> }>([
      'nodes',
    ]);
    const kwokNodes = nodes.items.filter((node) => node.metadata.annotations?.['kwok.x-k8s.io/node'] === 'fake');
    expect(kwokNodes.map((node) => node.metadata.name).sort()).toEqual([...NODE_NAMES].sort());
    for (const node of kwokNodes) {
      expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(node.spec.taints ?? []).toEqual([]);
    }
  });

  test('a Deployment with 2 replicas becomes Available', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: podTemplate('web') },
    });
    await kubectl(['wait', '--namespace', namespace, '--for=condition=Available', '--timeout=60s', 'deployment/web']);
    const deployment = await getJson<{ status: { availableReplicas?: number } }>(['--namespace', namespace, 'deployment/web']);
    expect(deployment.status.availableReplicas).toBe(2);
  });

  test('a Job completes', async () => {
    await apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once' },
      spec: { backoffLimit: 0, template: podTemplate('once', 'Never') },
    });
    await kubectl(['wait', '--namespace', namespace, '--for=condition=Complete', '--timeout=60s', 'job/once']);
    const job = await getJson<{ status: { succeeded?: number } }>(['--namespace', namespace, 'job/once']);
    expect(job.status.succeeded).toBe(1);
  });

  test('a claim of the default StorageClass gets a volume; a claim of an unknown class stays Pending', async () => {
    const claim = (name: string, storageClassName?: string) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        ...(storageClassName ? { storageClassName } : {}),
      },
    });
    await apply(claim('data'));
    await apply(claim('orphan', 'no-such-class'));
    await kubectl(['wait', '--namespace', namespace, '--for=jsonpath={.status.phase}=Bound', '--timeout=60s', 'pvc/data']);
    // Long enough for a provisioner, were there one, to bind it: the default class bound the other claim at once.
    await sleep(3_000);
    const orphan = await getJson<{ status: { phase?: string } }>(['--namespace', namespace, 'pvc/orphan']);
    expect(orphan.status.phase).toBe('Pending');
  });

  test('up on a running cluster is a quick no-op', async () => {
    const before = await clusterStatus();
    expect(before.state).toBe('running');
    const started = performance.now();
    const state = await clusterUp();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(state.components.map((c) => c.pid)).toEqual(before.components.map((c) => c.pid));
    expect((await clusterStatus()).state).toBe('running');
  });
});

describe('named clusters', () => {
  const layout = clusterLayout('cluster-test');

  afterAll(async () => {
    await clusterDown({ layout });
  });

  test('a named cluster runs beside the default one with its own ports, files and context', async () => {
    const state = await clusterUp({ layout });
    const local = await clusterStatus();
    expect(state.server).not.toBe(local.server);
    expect(state.kubeconfig).toBe(join(layout.root, 'clusters', 'cluster-test', 'kubeconfig'));
    expect(await readFile(state.kubeconfig, 'utf8')).toContain('current-context: gantry-cluster-test');
    const nodes = await kubectl(['--kubeconfig', state.kubeconfig, 'get', 'nodes', '-o', 'name']);
    expect(nodes.trim().split('\n').sort()).toEqual(NODE_NAMES.map((name) => `node/${name}`).sort());
    expect(await knownClusters()).toEqual(expect.arrayContaining(['local', 'cluster-test']));
    expect((await clusterStatus(layout)).state).toBe('running');

    await clusterDown({ layout });
    expect((await clusterStatus(layout)).state).toBe('stopped');
    expect(existsSync(join(layout.root, 'clusters', 'cluster-test'))).toBe(false);
    expect((await clusterStatus()).state).toBe('running');
  });

  test('refuses a name that cannot be part of a context name', () => {
    expect(() => clusterLayout('Dev_1')).toThrow(/invalid name "Dev_1"/);
  });
});
