/**
 * Waiting for CRDs against the local cluster's real API server: a CRD created afresh (a group never seen before,
 * so no cache anywhere knows it) is used right after the wait by another client, as the demo used the
 * KluctlDeployment CRD and failed with "no matches for kind"; a CRD the server refuses ends the wait at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../../test/support/cli.ts';
import { createNamespace, deleteNamespace, schemalessCrd, testClient } from '../controller/test-support.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import { Cluster } from '../kube/cluster.ts';
import { ensureCrdsServed, waitForCrds } from './crds.ts';
import type { KubeObject } from '../kube/object.ts';

const client = testClient();
let namespace = '';
let cluster: Cluster;
const created: string[] = [];

/** Creates `crd` and remembers it for afterAll. */
async function createCrd(crd: ReturnType<typeof schemalessCrd>): Promise<string> {
  await cluster.apply(crd as unknown as KubeObject, { fieldManager: 'gantry-test' });
  created.push(crd.metadata.name);
  return crd.metadata.name;
}

beforeAll(async () => {
  cluster = new Cluster(new KubeClient(loadKubeConfig()));
  namespace = await createNamespace(client, 'crds');
});
afterAll(async () => {
  await deleteNamespace(client, namespace);
  if (created.length > 0) await kubectl(['delete', 'crd', '--ignore-not-found', '--wait=false', ...created]);
  await cluster.close();
});

describe('waitForCrds', { timeout: 120_000 }, () => {
  it('returns once another client can create an object of a CRD made the moment before, five times over', async () => {
    for (let round = 0; round < 5; round++) {
      const group = `r${round}.${namespace}.e2e.gantry.dev`;
      const name = await createCrd(schemalessCrd(group, 'Gizmo', 'gizmos'));
      expect(await waitForCrds(cluster, [name], { timeoutMs: 60_000 })).toEqual([]);
      // A client of its own (its own discovery), as the next command of a script is.
      const other = new Cluster(new KubeClient(loadKubeConfig()));
      const gizmo = { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: { name: `g${round}`, namespace } };
      try {
        expect((await other.apply(gizmo, { fieldManager: 'gantry-test' })).metadata.uid).toBeTruthy();
      } finally {
        await other.close();
      }
    }
  });

  it('ends at once for a CRD whose names the server refuses, and ensureCrdsServed names it', async () => {
    const group = `clash.${namespace}.e2e.gantry.dev`;
    const first = await createCrd(schemalessCrd(group, 'Sprocket', 'sprockets'));
    // Another plural with the first one's kind: the API server sets NamesAccepted False and never serves it.
    const clash = await createCrd(schemalessCrd(group, 'Sprocket', 'cogs'));
    const started = Date.now();
    const unserved = await waitForCrds(cluster, [first, clash], { timeoutMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(unserved).toEqual([{ name: clash, reason: expect.stringMatching(/^names not accepted: .*Sprocket/), failed: true }]);
    await expect(ensureCrdsServed(cluster, [clash], { timeoutMs: 60_000 })).rejects.toThrow(
      new RegExp(`not served: ${clash.replaceAll('.', '\\.')} \\(names not accepted`),
    );
  });

  it('gives up after the timeout on a CRD that does not exist, naming it', async () => {
    const missing = `absent.${namespace}.e2e.gantry.dev`;
    await expect(ensureCrdsServed(cluster, [missing], { timeoutMs: 1_000 })).rejects.toThrow(
      `CustomResourceDefinition(s) not served: ${missing} (it does not exist after 1 s)`,
    );
  });
});
