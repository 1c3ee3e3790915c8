import { describe, expect, it } from 'vitest';
import { ResultCollector } from './result.ts';

const ref = (kind: string, name: string, namespace = '') => ({ group: '', version: 'v1', kind, namespace, name });

describe('ResultCollector', () => {
  it('sorts refs by their printed form in byte order, as Kluctl does, and drops repeats', () => {
    const collector = new ResultCollector();
    for (const object of [ref('ConfigMap', 'b', 'app'), ref('ClusterRole', 'x'), ref('ConfigMap', 'a', 'app'), ref('ClusterRole', 'x')])
      collector.addNew(object);
    // Byte order puts `ClusterRole/x` (C) before `app/…` (a); a locale's collation would not.
    expect(collector.finish().newObjects.map((object) => `${object.namespace}/${object.kind}/${object.name}`)).toEqual([
      '/ClusterRole/x',
      'app/ConfigMap/a',
      'app/ConfigMap/b',
    ]);
  });
});
