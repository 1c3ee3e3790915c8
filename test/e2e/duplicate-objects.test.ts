/**
 * One object rendered by two deployment items is a render error naming the object and both items' folders: deploy
 * applies nothing (before, both items applied it and the later one won), and render reports it too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry, gantryJson, kubectl, localContext } from '../support/cli.ts';

const NS = `gantry-e2e-dup-${Math.random().toString(36).slice(2, 8)}`;
const configMap = (name: string, value: string, namespace?: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${namespace ? `  namespace: ${namespace}\n` : ''}data:\n  key: ${value}\n`;

let dir = '';
let context = '';
beforeAll(async () => {
  context = await localContext();
  dir = await writeProject({
    '.kluctl.yaml': `discriminator: ${NS}\ntargets:\n  - name: t\n`,
    'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: first\n  - path: second\noverrideNamespace: ${NS}\n`,
    'ns/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS}\n`,
    'first/shared.yaml': configMap('shared', 'from-first'),
    'first/own.yaml': configMap('own', 'only-first'),
    // The same ConfigMap, its namespace written out here and settled from overrideNamespace in the first item.
    'second/shared.yaml': configMap('shared', 'from-second', NS),
  });
});
afterAll(async () => {
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  await removeCopy(dir);
});

describe('an object rendered by two items', { timeout: 300_000 }, () => {
  it('fails deploy naming the object and both items, applying nothing', async () => {
    const { code, result } = await gantryJson(['deploy', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(result.errors.map((error) => error.message)).toEqual([
      `${NS}/ConfigMap/shared is rendered by 2 deployment items: first, second; an object may come from one item only`,
    ]);
    expect(code).toBe(1);
    expect(result.newObjects).toEqual([]);
    expect((await kubectl(['get', 'namespaces', '-o', 'name'])).split('\n')).not.toContain(`namespace/${NS}`);
  });

  it('fails render with the same error', async () => {
    const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${NS}/ConfigMap/shared is rendered by 2 deployment items: first, second`);
    expect(run.stdout).not.toContain('from-first');
  });
});
