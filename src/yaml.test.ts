/**
 * The cases the YAML fuzzer (test/fuzz/yaml.test.ts) found, kept as examples so they stay covered whatever the
 * fuzzer's random search finds next time.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ALIAS_EXPANSION, parseYaml, parseYamlDocuments, replaceScalar, toYaml, YamlError } from './yaml.ts';

function refusal(text: string): YamlError {
  try {
    parseYaml(text, 'input.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(YamlError);
    return error as YamlError;
  }
  throw new Error('parsed');
}

describe('parseYaml refuses with a YamlError naming the source', () => {
  it('an alias without its anchor (was a ReferenceError without the file)', () => {
    expect(refusal('a: 1\np: *a\n').message).toBe('input.yaml:2: invalid YAML: alias *a has no anchor &a before it');
  });

  it('an alias inside its own anchor (was a cyclic value, which JSON.stringify and deep merges cannot walk)', () => {
    expect(refusal('a: &a [x, *a]\n').message).toBe('input.yaml:1: invalid YAML: alias *a is inside its own anchor');
    expect(refusal('a: &a {<<: *a}\n').message).toMatch(/alias \*a is inside its own anchor/);
  });

  it('a merge of something other than a map (was a plain Error without the file)', () => {
    expect(refusal('a: &a [1]\nb: {<<: *a}\n').message).toBe('input.yaml: invalid YAML: Merge sources must be maps or map aliases');
  });

  it('nested aliases expanding past the limit (was a ReferenceError without the file)', () => {
    const levels = ['l0: &l0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let level = 1; level <= 6; level++)
      levels.push(
        `l${level}: &l${level} [${Array(10)
          .fill(`*l${level - 1}`)
          .join(', ')}]`,
      );
    expect(refusal(levels.join('\n')).message).toMatch(/aliases expand the document by \d+ values, more than the 1000000 allowed/);
  });

  it('one wide anchor aliased many times (43 kB that used to parse, and expand to 20 million values downstream)', () => {
    const text = `a: &a [${Array(20_000).fill('x').join(',')}]\nb: [${Array(999).fill('*a').join(',')}]\n`;
    expect(refusal(text).message).toMatch(/more than the 1000000 allowed/);
  });

  it('so many anchors and aliases that resolving them is quadratic (a megabyte used to take minutes)', () => {
    const text = Array.from({ length: 5_000 }, (_, index) => `- &a${index} x\n- *a${index}\n`).join('');
    expect(refusal(text).message).toMatch(/too many anchors and aliases to resolve/);
  });

  it('a !!binary that is not base64 (was a Uint8Array, which schema checks refused without naming a problem)', () => {
    expect(refusal('!!binary A+A++-/+A+/').message).toBe('input.yaml:1: invalid YAML: !!binary value contains invalid base64 data');
  });

  it("a long line of errors in linear time (the library's pretty errors copied the line into each: minutes for 700 kB)", () => {
    expect(refusal('<<: *a<<: [*a, *b]'.repeat(40_000)).message).toBe('input.yaml:1: invalid YAML: Unexpected flow-seq-start at node end');
  });
});

describe('parseYaml still accepts', () => {
  it('!!binary as Go reads it: the decoded text', () => {
    expect(parseYaml('a: !!binary aGVsbG8=\nb: !!binary |\n  aGVs\n  bG8=\n', 'input.yaml')).toEqual({ a: 'hello', b: 'hello' });
  });

  it('aliases and merges within the limits, sharing the anchored value', () => {
    const value = parseYaml('base: &base {x: 1}\nmerged: {<<: *base, z: 2}\nsame: *base\n', 'input.yaml') as Record<string, unknown>;
    expect(value).toEqual({ base: { x: 1 }, merged: { x: 1, z: 2 }, same: { x: 1 } });
  });

  it('an expansion just under the limit', () => {
    const text = `a: &a [${Array(999).fill('x').join(',')}]\nb: [${Array(1_000).fill('*a').join(',')}]\n`;
    const value = parseYaml(text, 'input.yaml') as { b: unknown[][] };
    expect(value.b.length * value.b[0]!.length).toBeLessThan(MAX_ALIAS_EXPANSION);
  });

  it('a chain of merges the library used to refuse as an attack after 20 links', () => {
    const lines = [
      'a0: &a0 {k0: 1}',
      ...Array.from({ length: 59 }, (_, index) => `a${index + 1}: &a${index + 1} {<<: *a${index}, k${index + 1}: 1}`),
    ];
    expect(Object.keys((parseYaml(lines.join('\n'), 'input.yaml') as Record<string, object>)['a59']!)).toHaveLength(60);
  });
});

describe('toYaml', () => {
  it('quotes a `<<` key, which would read back as a merge key (was written plain)', () => {
    expect(toYaml({ '<<': 'on' })).toBe('"<<": "on"\n');
    expect(parseYamlDocuments(toYaml({ '<<': 'on' }), 'written')).toEqual([{ '<<': 'on' }]);
  });

  it('refuses a value nested too deeply with a plain Error (was a RangeError from the stack)', () => {
    let value: unknown = 'leaf';
    for (let level = 0; level < 20_000; level++) value = { a: value };
    expect(() => toYaml(value)).toThrow(/^cannot write YAML: /);
    try {
      toYaml(value);
    } catch (error) {
      expect((error as Error).constructor).toBe(Error);
    }
  });
});

describe('replaceScalar', () => {
  it('quotes a value that would change a flow list (was `[p, q, y]`: one item became two)', () => {
    expect(replaceScalar('[x, y]\n', ['0'], 'p, q', 'chart.yaml')).toBe('["p, q", y]\n');
    expect(replaceScalar('{a: x, b: y}\n', ['a'], 'p]', 'chart.yaml')).toBe('{a: "p]", b: y}\n');
  });

  it('keeps the line break after a block scalar (was `a: "z"b: 1`)', () => {
    expect(replaceScalar('a: |\n  x\n  y\nb: 1\n', ['a'], 'z', 'chart.yaml')).toBe('a: "z"\nb: 1\n');
    expect(replaceScalar('"a":\n  "chartVersion": |\n"b": <<\n', ['a', 'chartVersion'], '<<', 'chart.yaml')).toBe(
      '"a":\n  "chartVersion": "<<"\n"b": <<\n',
    );
  });

  it('writes a line break double-quoted where single quotes would fold it (was invalid YAML)', () => {
    expect(replaceScalar("a: 'x'\n", ['a'], 'p\nq', 'chart.yaml')).toBe('a: "p\\nq"\n');
  });

  it('keeps the style and comments where the value fits', () => {
    expect(replaceScalar("a: 'x' # pinned\nb: y\n", ['a'], '1.10', 'chart.yaml')).toBe("a: '1.10' # pinned\nb: y\n");
    expect(replaceScalar('a: x\n', ['a'], '1.10', 'chart.yaml')).toBe('a: "1.10"\n');
  });
});
