/**
 * Server-side apply of any kind: a CustomResourceDefinition and a resource of it in one project, in one diff (the
 * kind does not exist yet) and in one deploy; validate reports readiness from the resource's status conditions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.gantry.dev
spec:
  group: e2e.gantry.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {size: {type: integer}}}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;

let dir = '';
let args: string[] = [];
beforeAll(async () => {
  dir = await writeProject({
    '.kluctl.yaml': 'discriminator: gantry-e2e-crd\ntargets:\n  - name: t\n',
    'deployment.yaml': 'deployments:\n  - path: crds\n  - path: widgets\noverrideNamespace: gantry-e2e-crd\n',
    'crds/crd.yaml': CRD,
    'widgets/namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gantry-e2e-crd\n',
    'widgets/widget.yaml': 'apiVersion: e2e.gantry.dev/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n',
  });
  args = ['-t', 't', '--project-dir', dir, '--context', await localContext()];
});
afterAll(async () => {
  await gantryJson(['delete', '-y', ...args]);
  await removeCopy(dir);
});

describe('a CRD and its resources in one project', { timeout: 300_000 }, () => {
  it('diffs before the CRD exists, showing both as new and creating nothing', async () => {
    const { code, result } = await gantryJson(['diff', ...args]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.newObjects)).toEqual([
      'CustomResourceDefinition/widgets.e2e.gantry.dev',
      'Namespace/gantry-e2e-crd',
      'gantry-e2e-crd/Widget/w1',
    ]);
    expect(await kubectl(['get', 'crd', '-o', 'name'])).not.toContain('widgets.e2e.gantry.dev');
  });

  it('deploys both in one run, and a second run changes nothing', async () => {
    const first = await gantryJson(['deploy', ...args]);
    expect(first.result.errors).toEqual([]);
    expect(names(first.result.newObjects)).toContain('gantry-e2e-crd/Widget/w1');
    const widget = await kubectlJson<Record<string, any>>(['get', 'widget', 'w1', '-n', 'gantry-e2e-crd']);
    expect(widget.spec.size).toBe(3);
    expect(widget.metadata.labels['kluctl.io/discriminator']).toBe('gantry-e2e-crd');
    const second = await gantryJson(['deploy', ...args]);
    expect(second.result.newObjects).toEqual([]);
    expect(second.result.changedObjects).toEqual([]);
  });

  it('validates readiness from status conditions', async () => {
    await kubectl([
      'patch',
      'widget',
      'w1',
      '-n',
      'gantry-e2e-crd',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Warming","message":"warming up"}]}}',
    ]);
    const notReady = await gantryJson(['validate', ...args]);
    expect(notReady.code).toBe(1);
    expect(notReady.result.errors).toEqual([
      { object: expect.objectContaining({ kind: 'Widget', name: 'w1' }), message: expect.stringMatching(/not ready: .*warming up/) },
    ]);
    await kubectl([
      'patch',
      'widget',
      'w1',
      '-n',
      'gantry-e2e-crd',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done","message":""}]}}',
    ]);
    const ready = await gantryJson(['validate', ...args]);
    expect(ready.result.errors).toEqual([]);
    expect(ready.code).toBe(0);
  });
});

describe('a CRD never seen before and its object in the same item', { timeout: 300_000 }, () => {
  const suffix = Math.random().toString(36).slice(2, 8);
  const crds: string[] = [];
  afterAll(async () => {
    await kubectl(['delete', 'namespace', `gantry-e2e-crd-${suffix}`, '--ignore-not-found', '--wait=false']);
    if (crds.length > 0) await kubectl(['delete', 'crd', '--ignore-not-found', '--wait=false', ...crds]);
  });

  it('deploys both in one run, three times with a fresh group each', async () => {
    const context = await localContext();
    for (let round = 0; round < 3; round++) {
      const group = `r${round}-${suffix}.e2e.gantry.dev`;
      crds.push(`widgets.${group}`);
      const dir = await writeProject({
        '.kluctl.yaml': `discriminator: gantry-e2e-crd-${suffix}-${round}\ntargets:\n  - name: t\n`,
        'deployment.yaml': `deployments:\n  - path: all\noverrideNamespace: gantry-e2e-crd-${suffix}\n`,
        'all/widget.yaml': `apiVersion: ${group}/v1\nkind: Widget\nmetadata:\n  name: w${round}\nspec:\n  size: ${round}\n`,
        'all/crd.yaml': CRD.replaceAll('widgets.e2e.gantry.dev', `widgets.${group}`).replace('group: e2e.gantry.dev', `group: ${group}`),
        'all/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gantry-e2e-crd-${suffix}\n`,
      });
      try {
        const { code, result } = await gantryJson(['deploy', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
        expect(result.errors).toEqual([]);
        expect(code).toBe(0);
        const widget = await kubectlJson<Record<string, any>>(['get', `widgets.${group}`, `w${round}`, '-n', `gantry-e2e-crd-${suffix}`]);
        expect(widget.spec.size).toBe(round);
      } finally {
        await removeCopy(dir);
      }
    }
  });
});
