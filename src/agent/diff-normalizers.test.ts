/**
 * Diff normalizers on rendered objects: matching by kind, name and namespace, pointers removed, or backfilled from
 * the live object (removed when the live object lacks them). The agent's use on a real cluster is in the operator's
 * end-to-end test.
 */
import { describe, expect, test } from 'vitest';
import type { KubeObject } from '../kube/object.ts';
import { parseYamlDocuments } from '../yaml.ts';
import { normalizeObjects } from './diff-normalizers.ts';

const rendered = (): KubeObject[] =>
  parseYamlDocuments(
    `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: shop}
spec:
  replicas: 1
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {a: "1", b: "2"}
`,
    'rendered.yaml',
  ) as KubeObject[];

const liveWeb = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, spec: { replicas: 5 } };

describe('normalizeObjects', () => {
  test('backfill takes the live value for the matching objects only; other objects keep theirs', async () => {
    const objects = rendered();
    await normalizeObjects(objects, [{ kind: 'Deployment', name: 'web', backfill: true, jsonPointers: ['/spec/replicas'] }], async (ref) =>
      ref.name === 'web' && ref.kind === 'Deployment' ? liveWeb : undefined,
    );
    expect(objects.map((o) => (o.spec as { replicas?: number } | undefined)?.replicas)).toEqual([5, 1, undefined]);
  });

  test('backfill keeps the rendered value when there is no live one (the first apply)', async () => {
    const objects = rendered();
    await normalizeObjects(objects, [{ kind: 'Deployment', backfill: true, jsonPointers: ['/spec/replicas'] }], async (ref) =>
      ref.name === 'web' ? { ...liveWeb, spec: {} } : undefined,
    );
    expect(objects.slice(0, 2).map((o) => (o.spec as { replicas: number }).replicas)).toEqual([2, 1]);
  });

  test('without backfill the pointers are removed, array elements included; a missing pointer is no error', async () => {
    const objects = rendered();
    await normalizeObjects(
      objects,
      [
        { namespace: 'shop', kind: 'ConfigMap', jsonPointers: ['/data/b', '/data/missing/deeper'] },
        { name: 'web', kind: 'Deployment', jsonPointers: ['/spec/template/spec/containers/0/image'] },
      ],
      async () => {
        throw new Error('no live object is read without backfill');
      },
    );
    expect(objects[2]!.data).toEqual({ a: '1' });
    expect(objects[0]!.spec).toMatchObject({ template: { spec: { containers: [{ name: 'app' }] } } });
    expect(JSON.stringify(objects[0])).not.toContain('nginx');
  });

  test('a normalizer for another namespace matches nothing', async () => {
    const objects = rendered();
    await normalizeObjects(objects, [{ namespace: 'other', jsonPointers: ['/data'] }], async () => undefined);
    expect(objects[2]!.data).toEqual({ a: '1', b: '2' });
  });
});
