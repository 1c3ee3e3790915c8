/**
 * waitForReadiness against the local cluster, with objects already known (an apply's answer, a watched cache): one
 * known Ready is taken as it is, one known not Ready is read again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../kube/cluster.ts';
import { refKey, refOf, type KubeObject } from '../kube/object.ts';
import { createNamespace, deleteNamespace, testClient } from '../controller/test-support.ts';
import { waitForReadiness } from './wait.ts';

describe('waitForReadiness with known objects', () => {
  const client = testClient();
  let cluster: Cluster;
  let namespace: string;

  beforeAll(async () => {
    namespace = await createNamespace(client, 'wait-known');
    cluster = new Cluster(testClient());
  });
  afterAll(async () => {
    await cluster.close();
    await deleteNamespace(client, namespace);
  });

  const configMap = (name: string, annotations: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, annotations },
  });

  it('takes an object known Ready as it is and reads one known not Ready', async () => {
    // In the cluster: ready (a ConfigMap). Known: not ready, so it must be read to be found ready.
    await cluster.apply(configMap('present'), { fieldManager: 'test' });
    // Not in the cluster at all: only a wait that never reads it finds it ready.
    const absent = configMap('absent');
    const known = new Map([
      [refKey(refOf(absent)), absent],
      [refKey(refOf(configMap('present'))), configMap('present', { 'kluctl.io/is-ready': 'false' })],
    ]);
    const refs = [refOf(configMap('present')), refOf(absent)];

    expect(await waitForReadiness(cluster, refs, { timeoutMs: 0, known })).toEqual([]);
    const unknown = await waitForReadiness(cluster, refs, { timeoutMs: 0 });
    expect(unknown.map((entry) => [entry.ref.name, entry.reason])).toEqual([['absent', 'does not exist']]);
  });
});
