import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { example } from '../../test/support/fixtures.ts';
import { parseYaml } from '../yaml.ts';
import { buildKustomization, buildNatively, buildWithBinary } from './kustomize.ts';
import { testTools } from '../../test/support/engine.ts';

const tools = testTools();

const scratch: string[] = [];
afterAll(async () => Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true }))));

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-kustomize-'));
  scratch.push(dir);
  for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
  return dir;
}

const MIXED = [
  ['apps/v1', 'Deployment', 'zeta', ''],
  ['v1', 'Service', 'beta', ''],
  ['apps/v1', 'Deployment', 'alpha', ''],
  ['z.com/v1', 'Abc', 'x', ''],
  ['a.com/v1', 'Zed', 'x', ''],
  ['a.com/v2', 'Abc', 'x', ''],
  ['v1', 'Pod', 'p', ''],
  ['apps/v1', 'ReplicaSet', 'r', ''],
  ['v1', 'ConfigMap', 'cm', ''],
  ['admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', 'vw', ''],
  ['v1', 'Namespace', 'ns1', ''],
  ['apps/v1', 'Deployment', 'mid', 'aaa'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'b', ''],
]
  .map(
    ([apiVersion, kind, name, namespace]) =>
      `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: ${name}\n${namespace ? `  namespace: ${namespace}\n` : ''}`,
  )
  .join('---\n');

describe('native fast path', () => {
  it('orders objects exactly as the kustomize binary does', async () => {
    const dir = await folder({ 'all.yaml': MIXED, 'kustomization.yaml': 'resources:\n- all.yaml\n' });
    expect(await buildNatively(dir, { resources: ['all.yaml'] })).toEqual(await buildWithBinary(dir, tools));
  });

  it('sets the namespace (and renames the Namespace) as the binary does', async () => {
    const objects = MIXED.split('---\n')
      .filter((document) => !document.includes('WebhookConfiguration'))
      .join('---\n');
    const dir = await folder({ 'all.yaml': objects, 'kustomization.yaml': 'resources:\n- all.yaml\nnamespace: target\n' });
    const native = await buildNatively(dir, { resources: ['all.yaml'], namespace: 'target' });
    expect(native?.find((object) => object.kind === 'Namespace')?.metadata.name).toBe('target');
    expect(native).toEqual(await buildWithBinary(dir, tools));
  });

  it('leaves namespace rewriting of webhooks and several Namespaces to the binary', async () => {
    const dir = await folder({ 'all.yaml': MIXED, 'kustomization.yaml': 'resources:\n- all.yaml\nnamespace: target\n' });
    expect(await buildNatively(dir, { resources: ['all.yaml'], namespace: 'target' })).toBeUndefined();
  });

  it('matches the binary on every item of the microservices demo', async () => {
    const services = example('microservices-demo/1-basic-project');
    const dirs = (await readdir(services, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    expect(dirs.length).toBeGreaterThan(10);
    for (const name of dirs) {
      const copy = await mkdtemp(path.join(os.tmpdir(), 'gantry-kustomize-'));
      scratch.push(copy);
      await cp(path.join(services, name), copy, { recursive: true });
      const kustomization = parseYaml(await readFile(path.join(copy, 'kustomization.yml'), 'utf8'), name) as Record<string, unknown>;
      expect(await buildNatively(copy, { ...kustomization, namespace: 'ns' }), name).toEqual(
        await buildWithBinary(await withNamespace(copy, 'ns'), tools),
      );
    }
  });

  it('leaves anything beyond a resource list to the binary', async () => {
    const dir = await folder({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n',
      'kustomization.yaml': 'resources:\n- cm.yaml\nnamePrefix: pre-\n',
    });
    expect(await buildNatively(dir, { resources: ['cm.yaml'], namePrefix: 'pre-' })).toBeUndefined();
    const { objects, usedBinary } = await buildKustomization(dir, { tools });
    expect(usedBinary).toBe(true);
    expect(objects.map((object) => object.metadata.name)).toEqual(['pre-cm']);
  });

  it('generates a kustomization listing the folder when there is none', async () => {
    const dir = await folder({
      'b.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n',
      'a.yml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n',
      'notes.txt': 'x',
    });
    const { objects, usedBinary } = await buildKustomization(dir, { overrideNamespace: 'ns', tools });
    expect(usedBinary).toBe(false);
    expect(objects.map((object) => `${object.metadata.namespace}/${object.metadata.name}`)).toEqual(['ns/a', 'ns/b']);
  });
});

async function withNamespace(dir: string, namespace: string): Promise<string> {
  const file = path.join(dir, 'kustomization.yml');
  await writeFile(file, `${await readFile(file, 'utf8')}\nnamespace: ${namespace}\n`);
  return dir;
}
