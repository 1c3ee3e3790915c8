/**
 * The acceptance path on the real cluster: 3-templating-and-multi-env targets test and local side by side,
 * idempotent redeploy, prune by discriminator, and delete that leaves the other target alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { example } from '../support/fixtures.ts';
import { gantry, gantryJson, kubectlJson, localContext, names } from '../support/cli.ts';

const PROJECT = example('microservices-demo/3-templating-and-multi-env');
let common: string[] = [];
let renderArgs: string[] = [];
const TEST_DISCRIMINATOR = 'kluctl-examples-microservices-demo-test';
const LOCAL_DISCRIMINATOR = 'kluctl-examples-microservices-demo-local';

async function labelled(discriminator: string): Promise<Array<Record<string, any>>> {
  const kinds = 'deployments,statefulsets,services,configmaps,serviceaccounts,namespaces,secrets,poddisruptionbudgets';
  return (await kubectlJson(['get', kinds, '-A', '-l', `kluctl.io/discriminator=${discriminator}`])).items;
}

async function deploymentsOf(namespace: string): Promise<Array<Record<string, any>>> {
  return (await kubectlJson(['get', 'deployments', '-n', namespace])).items;
}

function isAvailable(deployment: Record<string, any>): boolean {
  return (deployment.status?.conditions ?? []).some((condition: any) => condition.type === 'Available' && condition.status === 'True');
}

describe('microservices-demo 3-templating-and-multi-env', { timeout: 600_000 }, () => {
  beforeAll(async () => {
    renderArgs = ['--project-dir', PROJECT, '--context', await localContext()];
    common = [...renderArgs, '--timeout', '5m'];
    for (const target of ['test', 'local']) await gantry(['delete', '-t', target, '-y', ...common]);
  });
  afterAll(async () => {
    for (const target of ['test', 'local']) await gantry(['delete', '-t', target, '-y', ...common]);
  });

  it('deploys targets test and local side by side, every Deployment Available', async () => {
    for (const target of ['test', 'local']) {
      const { code, result, stderr } = await gantryJson(['deploy', '-t', target, ...common]);
      expect(result.errors, stderr).toEqual([]);
      expect(code).toBe(0);
      expect(names(result.newObjects)).toContain(`ms-demo-${target}/Deployment/frontend`);
    }
    const test = await deploymentsOf('ms-demo-test');
    const local = await deploymentsOf('ms-demo-local');
    expect(test.map((deployment) => deployment.metadata.name)).toContain('emailservice');
    expect(local.map((deployment) => deployment.metadata.name)).not.toContain('emailservice');
    for (const deployment of [...test, ...local]) expect(isAvailable(deployment), deployment.metadata.name).toBe(true);
  });

  it('labels every object with its target discriminator', async () => {
    const test = await labelled(TEST_DISCRIMINATOR);
    expect(test.length).toBeGreaterThan(20);
    for (const object of test) {
      expect(object.metadata.labels['kluctl.io/discriminator']).toBe(TEST_DISCRIMINATOR);
      if (object.kind !== 'Namespace') expect(object.metadata.namespace).toBe('ms-demo-test');
    }
    const rendered = await gantry(['render', '-t', 'test', ...renderArgs]);
    const documents = rendered.stdout.split(/^---$/m).filter((document) => document.trim());
    expect(documents.length).toBeGreaterThan(20);
    for (const document of documents) expect(document).toContain(`kluctl.io/discriminator: ${TEST_DISCRIMINATOR}`);
  });

  it('reports no new and no changed objects on a second deploy', async () => {
    const { code, result } = await gantryJson(['deploy', '-t', 'test', ...common]);
    expect(code).toBe(0);
    expect(result.newObjects).toEqual([]);
    expect(result.changedObjects).toEqual([]);
    expect(result.errors).toEqual([]);
  });

  it('prunes emailservice and loadgenerator from test with env_type=local, touching nothing of local', async () => {
    const localBefore = (await labelled(LOCAL_DISCRIMINATOR))
      .map((object) => `${object.kind}/${object.metadata.name}@${object.metadata.resourceVersion}`)
      .sort();
    const { code, result } = await gantryJson(['deploy', '-t', 'test', '-a', 'env_type=local', '--prune', '-y', ...common]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.deletedObjects)).toEqual(
      expect.arrayContaining([
        'ms-demo-test/Deployment/emailservice',
        'ms-demo-test/Service/emailservice',
        'ms-demo-test/Deployment/loadgenerator',
      ]),
    );
    expect(result.deletedObjects.every((ref) => ref.namespace === 'ms-demo-test')).toBe(true);
    const remaining = (await deploymentsOf('ms-demo-test')).map((deployment) => deployment.metadata.name);
    expect(remaining).not.toContain('emailservice');
    expect(remaining).not.toContain('loadgenerator');
    const localAfter = (await labelled(LOCAL_DISCRIMINATOR))
      .map((object) => `${object.kind}/${object.metadata.name}@${object.metadata.resourceVersion}`)
      .sort();
    expect(localAfter).toEqual(localBefore);
  });

  it('deletes every object of test and none of local', async () => {
    const localBefore = (await labelled(LOCAL_DISCRIMINATOR)).length;
    const { code, result } = await gantryJson(['delete', '-t', 'test', '-y', ...common]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.deletedObjects)).toContain('Namespace/ms-demo-test');
    expect(await labelled(TEST_DISCRIMINATOR)).toEqual([]);
    expect((await labelled(LOCAL_DISCRIMINATOR)).length).toBe(localBefore);
  });
});
