/**
 * Dry runs against the local cluster's real API server: every write of a dry-run view persists nothing (a delete
 * included, whose dry run the API server reads only from the DeleteOptions body), and a write that does not ask for a
 * dry run never leaves the process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../../test/support/cli.ts';
import { DryRunWriteError, KubeClient, loadKubeConfig } from './client.ts';
import { Cluster } from './cluster.ts';
import type { ObjectRef } from './object.ts';

const NS = `gantry-dry-run-${Math.random().toString(36).slice(2, 8)}`;
const configMap = (name: string): ObjectRef => ({ group: '', version: 'v1', kind: 'ConfigMap', namespace: NS, name });
const namespaceRef: ObjectRef = { group: '', version: 'v1', kind: 'Namespace', namespace: '', name: NS };

let cluster: Cluster;

/** uid@resourceVersion of the ConfigMap `name`, or of the namespace. */
async function version(name?: string): Promise<string> {
  const object = await kubectlJson<{ metadata: { uid: string; resourceVersion: string; deletionTimestamp?: string } }>(
    name ? ['get', 'configmap', name, '-n', NS] : ['get', 'namespace', NS],
  );
  return `${object.metadata.uid}@${object.metadata.resourceVersion}${object.metadata.deletionTimestamp ? ' terminating' : ''}`;
}

beforeAll(async () => {
  cluster = new Cluster(new KubeClient(loadKubeConfig()));
  await kubectl(['create', 'namespace', NS]);
  await kubectl(['create', 'configmap', 'kept', '-n', NS, '--from-literal=value=1']);
});
afterAll(async () => {
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  await cluster.close();
});

describe('a dry-run view of a cluster', () => {
  it('deletes nothing: neither an object nor its namespace', async () => {
    const before = [await version('kept'), await version()];
    const dryRun = cluster.dryRun();
    expect(await dryRun.delete(configMap('kept'))).toBe(true);
    expect(await dryRun.delete(namespaceRef)).toBe(true);
    expect([await version('kept'), await version()]).toEqual(before);
  });

  it('persists no apply, replace, patch or create', async () => {
    const before = await version('kept');
    const dryRun = cluster.dryRun().withSignal(AbortSignal.timeout(30_000));
    const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept', namespace: NS }, data: { value: '2' } };
    const applied = await dryRun.apply(object, { fieldManager: 'gantry-test', force: true });
    expect(applied.data).toEqual({ value: '2' });
    await dryRun.replace(object, before.split('@')[1]!, { fieldManager: 'gantry-test' });
    await dryRun.patchJson(configMap('kept'), [{ op: 'replace', path: '/data/value', value: '3' }], { fieldManager: 'gantry-test' });
    await dryRun.patchMerge(configMap('kept'), { data: { value: '4' } }, { fieldManager: 'gantry-test' });
    await dryRun.create({ ...object, metadata: { name: 'created', namespace: NS } }, { fieldManager: 'gantry-test' });
    expect(await version('kept')).toBe(before);
    expect(await cluster.get(configMap('created'))).toBeUndefined();
  });

  it('refuses a write that does not ask for a dry run before sending it', async () => {
    const before = await version('kept');
    const path = await cluster.objectPath(configMap('kept'));
    const client = cluster.dryRun().client;
    // A DELETE whose dry run is in the query only: what Gantry sent before, which the API server executes.
    await expect(
      client.request('DELETE', path, { body: { kind: 'DeleteOptions', apiVersion: 'v1' }, query: { dryRun: 'All' } }),
    ).rejects.toThrow(DryRunWriteError);
    await expect(
      client.request('PATCH', path, { body: { data: { value: '5' } }, contentType: 'application/merge-patch+json' }),
    ).rejects.toThrow(/refusing to send PATCH .*\/configmaps\/kept without dryRun during a dry run/);
    expect(await version('kept')).toBe(before);
  });
});
