import { describe, expect, it } from 'vitest';
import { readDigest, RenderInputs } from './render-inputs.ts';

describe('readDigest', () => {
  it("ignores key order and a list's own resourceVersion, not its items'", () => {
    const list = (listVersion: string, itemVersion: string) => ({
      kind: 'ConfigMapList',
      metadata: { resourceVersion: listVersion },
      items: [{ metadata: { name: 'a', resourceVersion: itemVersion } }],
    });
    expect(readDigest(200, list('1', '5'))).toBe(readDigest(200, list('9', '5')));
    expect(readDigest(200, list('1', '5'))).not.toBe(readDigest(200, list('1', '6')));
    expect(readDigest(200, { a: 1, b: 2 })).toBe(readDigest(200, { b: 2, a: 1 }));
    const object = { kind: 'ConfigMap', metadata: { name: 'a', resourceVersion: '1' } };
    expect(readDigest(200, object)).not.toBe(readDigest(200, { ...object, metadata: { name: 'a', resourceVersion: '2' } }));
  });

  it('tells answers apart by status', () => {
    expect(readDigest(404, undefined)).not.toBe(readDigest(403, undefined));
    expect(readDigest(404, undefined)).not.toBe(readDigest(200, {}));
  });
});

describe('RenderInputs', () => {
  it("keeps a path's first answer per Accept header, and every reason once", () => {
    const inputs = new RenderInputs();
    inputs.recordRead({ path: '/api', accept: 'a', digest: '1' });
    inputs.recordRead({ path: '/api', accept: 'a', digest: '2' });
    inputs.recordRead({ path: '/api', accept: 'b', digest: '3' });
    inputs.cannotReuse('x');
    inputs.cannotReuse('x');
    expect(inputs.reads.map((read) => read.digest)).toEqual(['1', '3']);
    expect(inputs.notReusable).toEqual(['x']);
  });
});
