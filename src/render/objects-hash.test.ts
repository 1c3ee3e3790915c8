import { describe, expect, it } from 'vitest';
import { objectsHash } from './objects-hash.ts';

const cm = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });

describe('objectsHash', () => {
  it('ignores object and key order but sees every value', () => {
    const a = cm('a', { x: '1', y: '2' });
    const b = cm('b', {});
    expect(objectsHash([a, b])).toBe(objectsHash([b, { ...a, data: { y: '2', x: '1' } }]));
    expect(objectsHash([a, b])).not.toBe(objectsHash([cm('a', { x: '1', y: '3' }), b]));
    expect(objectsHash([a, b])).toMatch(/^[0-9a-f]{64}$/);
  });
});
