/**
 * The labelled-object cache against the local cluster: a label key of the test's own, so only its objects are kept;
 * writes through the Cluster, writes by another client (seen through the watch), and a kind served only later.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from './cluster.ts';
import type { KubeObject } from './object.ts';
import { createNamespace, deleteNamespace, schemalessCrd, testClient, waitFor } from '../controller/test-support.ts';

describe('LabelledObjects', () => {
  const client = testClient();
  const label = `test-${randomBytes(3).toString('hex')}.gantry.dev/owner`;
  let cluster: Cluster;
  let namespace: string;

  beforeAll(async () => {
    namespace = await createNamespace(client, 'labelled');
    cluster = new Cluster(testClient(), { watchLabel: label });
  });
  afterAll(async () => {
    await cluster.close();
    await deleteNamespace(client, namespace);
  });

  const configMap = (name: string, owner: string | undefined, data: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, ...(owner === undefined ? {} : { labels: { [label]: owner } }) },
    data,
  });
  const names = async (owner: string) =>
    (await cluster.labelled!.withValue(owner)).map((object) => `${object.kind}/${object.metadata.name}`).sort();
  const applyElsewhere = (object: KubeObject) =>
    client.request('PATCH', `/api/v1/namespaces/${namespace}/configmaps/${object.metadata.name}`, {
      body: object,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'someone-else', force: 'true' },
    });

  it('finds the objects with a label value, those made before it started and those made by others since', async () => {
    await applyElsewhere(configMap('before', 'a'));
    await applyElsewhere(configMap('other', 'b'));
    await applyElsewhere(configMap('unlabelled', undefined));
    expect(await names('a')).toEqual(['ConfigMap/before']);
    expect(await names('b')).toEqual(['ConfigMap/other']);
    expect(cluster.labelled!.watched).toBeGreaterThan(20);

    await applyElsewhere(configMap('later', 'a'));
    await waitFor('the watched create', async () => (await names('a')).includes('ConfigMap/later'));
    await client.request('DELETE', `/api/v1/namespaces/${namespace}/configmaps/later`);
    await waitFor('the watched delete', async () => !(await names('a')).includes('ConfigMap/later'));
  });

  it("reads this process's own writes at once: applied, relabelled and deleted", async () => {
    await cluster.apply(configMap('mine', 'a'), { fieldManager: 'gantry-test' });
    expect(await names('a')).toContain('ConfigMap/mine');
    await cluster.apply(configMap('mine', 'b'), { fieldManager: 'gantry-test' });
    expect(await names('a')).not.toContain('ConfigMap/mine');
    expect(await names('b')).toContain('ConfigMap/mine');
    await cluster.delete({ group: '', version: 'v1', kind: 'ConfigMap', namespace, name: 'mine' });
    expect(await names('b')).not.toContain('ConfigMap/mine');
  });

  it('keeps the newest state when an older one arrives later, and hands out copies', async () => {
    const first = await cluster.apply(configMap('versions', 'a', { step: '1' }), { fieldManager: 'gantry-test' });
    await cluster.apply(configMap('versions', 'a', { step: '2' }), { fieldManager: 'gantry-test' });
    cluster.labelled!.record(first);
    const read = async () => (await cluster.labelled!.withValue('a')).find((object) => object.metadata.name === 'versions');
    expect((await read())?.['data']).toEqual({ step: '2' });

    (await read())!['data'] = { step: 'changed by a caller' };
    expect((await read())?.['data']).toEqual({ step: '2' });
  });

  it("tells subscribers of others' writes and deletes, under the old and the new value of a relabelled object", async () => {
    await names('d');
    const told: string[] = [];
    const unsubscribe = cluster.labelled!.subscribe(({ value, key, object }) => {
      if (key.endsWith('/told')) told.push(`${value}:${object ? (object['data'] as Record<string, string>)['step'] : 'deleted'}`);
    });
    try {
      await applyElsewhere(configMap('told', 'd', { step: '1' }));
      await waitFor('the create told', () => told.includes('d:1'));
      await applyElsewhere(configMap('told', 'e', { step: '2' }));
      await waitFor('the relabel told under both values', () => told.includes('d:2') && told.includes('e:2'));
      await client.request('DELETE', `/api/v1/namespaces/${namespace}/configmaps/told`);
      await waitFor('the delete told', () => told.includes('e:deleted'));
      expect(told).toEqual(['d:1', 'd:2', 'e:2', 'e:deleted']);
    } finally {
      unsubscribe();
    }
    await applyElsewhere(configMap('told', 'd', { step: '3' }));
    await waitFor('the watched create', async () => (await names('d')).includes('ConfigMap/told'));
    expect(told).not.toContain('d:3');
  });

  it('watches a kind its CRD made served after the first read', async () => {
    const group = `${namespace}.e2e.gantry.dev`;
    const crd = schemalessCrd(group, 'Gadget', 'gadgets');
    await client.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd });
    try {
      const gadget = { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'one', namespace, labels: { [label]: 'c' } } };
      const created = await waitFor('the gadgets resource', () =>
        client.request('POST', `/apis/${group}/v1/namespaces/${namespace}/gadgets`, { body: gadget }).then(
          () => true,
          () => false,
        ),
      );
      expect(created).toBe(true);
      cluster.discovery.invalidate();
      expect(await names('c')).toEqual(['Gadget/one']);
    } finally {
      await client.request('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
    }
  });
});
