import { describe, expect, it } from 'vitest';
import { parseTargetPath, placeAtPath, queryJsonPath } from './json-path.ts';

describe('parseTargetPath', () => {
  it('reads keys, quoted keys and list indexes, with or without $', () => {
    expect(parseTargetPath('a.b.c')).toEqual(['a', 'b', 'c']);
    expect(parseTargetPath('$.a.b')).toEqual(['a', 'b']);
    expect(parseTargetPath(`a['x.y']["z"]`)).toEqual(['a', 'x.y', 'z']);
    expect(parseTargetPath('my-vars.list[0].name')).toEqual(['my-vars', 'list', 0, 'name']);
    expect(parseTargetPath(`a['0']`)).toEqual(['a', '0']);
  });

  it('refuses wildcards, filters, recursive descent, slices and a leading index', () => {
    for (const path of ['a.*', 'a[*]', 'a..b', 'a[?(@.x)]', 'a[0:2]', '[0].a', '$', '']) {
      expect(() => parseTargetPath(path), path).toThrow(/targetPath/);
    }
  });
});

describe('placeAtPath', () => {
  it('nests the value under the keys', () => {
    expect(placeAtPath(['a', 'b'], { x: 1 }, {}, 'a.b')).toEqual({ a: { b: { x: 1 } } });
  });

  it('sets one element of a list of the context, merging into a mapping element', () => {
    const context = { a: { list: [{ keep: 1, name: 'old' }, 'second'] } };
    expect(placeAtPath(['a', 'list', 0, 'name'], 'new', context, 'a.list[0].name')).toEqual({
      a: { list: [{ keep: 1, name: 'new' }, 'second'] },
    });
    expect(placeAtPath(['a', 'list', 2], 'third', context, 'a.list[2]')).toEqual({
      a: { list: [{ keep: 1, name: 'old' }, 'second', 'third'] },
    });
    expect(context.a.list).toHaveLength(2);
  });

  it('creates a list where there is none, and refuses a gap', () => {
    expect(placeAtPath(['a', 0], 'x', {}, 'a[0]')).toEqual({ a: ['x'] });
    expect(() => placeAtPath(['a', 1], 'x', {}, 'a[1]')).toThrow("targetPath 'a[1]': index 1 is beyond the end of the list (length 0)");
  });
});

describe('queryJsonPath', () => {
  const object = { metadata: { labels: { 'app.kubernetes.io/name': 'x' } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };

  it('selects with or without $, with brackets and filters', () => {
    expect(queryJsonPath(object, '$')).toEqual([object]);
    expect(queryJsonPath(object, `metadata.labels["app.kubernetes.io/name"]`)).toEqual(['x']);
    expect(queryJsonPath(object, `$.status.conditions[?(@.type=="Ready")].status`)).toEqual(['True']);
    expect(queryJsonPath(object, 'status.conditions[0].type')).toEqual(['Ready']);
  });

  it('selects nothing for a missing path or an empty value', () => {
    expect(queryJsonPath(object, 'status.missing')).toEqual([]);
    expect(queryJsonPath(null, '$')).toEqual([]);
  });
});
