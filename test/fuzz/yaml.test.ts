/**
 * Fuzzing the YAML codec (src/yaml.ts), through which every project file, vars file and rendered manifest is read and
 * written: whatever the text, a parse ends in plain values (acyclic, with a bounded alias expansion) or a YamlError
 * naming the source, within a time limit; values written with toYaml read back equal; replaceScalar either changes
 * exactly the one scalar or refuses. The calls run in a worker thread (support/yaml-sandbox.ts) so a hang or a
 * runaway allocation fails the case instead of the run. Budgets and seed replay: support/fuzz.ts.
 */
import fc from 'fast-check';
import { stringify, Scalar } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_ALIAS_EXPANSION } from '../../src/yaml.ts';
import { fuzz, testTimeout, type Budget } from './support/fuzz.ts';
import { YamlSandbox, type Outcome } from './support/yaml-sandbox.ts';

const SOURCE = 'fuzz/input.yaml';
/** A call taking longer than this is a hang: the largest generated inputs (about 2 MB) parse in well under a second. */
const CALL_LIMIT_MS = 15_000;

const sandbox = new YamlSandbox(CALL_LIMIT_MS);
afterAll(() => sandbox.close());

/** YAML's syntax in pieces, with the YAML 1.1 words and numbers, tags, anchors and merge keys: glued at random. */
const TOKENS = [
  ...['a', 'b', 'key', 'x y', '1', '-1', '0x1F', '0o17', '0755', '1_000', '1.5e3', '.inf', '-.nan', '190:20:30', '2001-12-14'],
  ...['on', 'off', 'yes', 'no', 'y', 'n', '~', 'null', 'true', 'False', '=', '__proto__', 'constructor', 'toString'],
  ...[':', ': ', '-', '- ', ' ', '  ', '    ', '\n', '\n  ', '\n    ', '\r\n', '\t', '#', ' # c\n', '?', '? ', ',', '[', ']', '{', '}'],
  ...['&a ', '&b ', '*a', '*b', '*c', '<<', '<<: ', '<<: *a', '<<: [*a, *b]', '!!str ', '!!int ', '!!float ', '!!bool ', '!!null '],
  ...['!!map ', '!!seq ', '!!set ', '!!omap ', '!!pairs ', '!!binary ', '!!timestamp ', '!local ', '!<tag:yaml.org,2002:str> '],
  ...['|', '|-', '|+', '|2', '>', '>-', '"', "'", '\\', '\\u00', '\\x', '---\n', '--- ', '...\n', '%YAML 1.1\n', '%YAML 1.2\n'],
  ...['%TAG !e! tag:example.com,2000:\n', '!e!x ', '\u2028', '\uFEFF', '\u0000', '\u0085', '\uD800', '😀'],
];

const tokenText = (maxLength: number) => fc.array(fc.constantFrom(...TOKENS), { maxLength }).map((tokens) => tokens.join(''));

const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: fc.constantFrom(...'ab:- \n[]{},&*!|>#\'"?%'.split('')), maxLength: 300 }),
  tokenText(150),
);

/** A flow-style node with anchors, aliases (to known, unknown and enclosing anchors) and merge keys. */
const { flowNode } = fc.letrec<{ flowNode: string }>((tie) => {
  const name = fc.constantFrom('a', 'b', 'c');
  const anchor = fc.option(
    name.map((n) => `&${n} `),
    { nil: '' },
  );
  const scalar = fc.constantFrom('x', '1', 'on', '"q"', "'s'", '~', '');
  const alias = name.map((n) => `*${n}`);
  const entry = fc.oneof(
    fc.tuple(fc.constantFrom('k', 'l', 'm'), tie('flowNode')).map(([key, value]) => `${key}: ${value}`),
    alias.map((target) => `<<: ${target}`),
    fc.array(alias, { minLength: 1, maxLength: 3 }).map((targets) => `<<: [${targets.join(', ')}]`),
  );
  return {
    flowNode: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.tuple(anchor, scalar).map(([a, s]) => a + s),
      alias,
      fc.tuple(anchor, fc.array(tie('flowNode'), { maxLength: 5 })).map(([a, items]) => `${a}[${items.join(', ')}]`),
      fc.tuple(anchor, fc.array(entry, { maxLength: 5 })).map(([a, entries]) => `${a}{${entries.join(', ')}}`),
    ),
  };
});

const aliasDocument = fc
  .array(fc.tuple(fc.constantFrom('p', 'q', 'r', 's'), flowNode), { minLength: 1, maxLength: 6 })
  .map((entries) => entries.map(([key, value]) => `${key}: ${value}\n`).join(''));

/** "Billion laughs": each level a list of aliases to the one before, `width` times (merge keys for maps). */
const laughs = fc
  .record({ levels: fc.integer({ min: 1, max: 9 }), width: fc.integer({ min: 1, max: 40 }), maps: fc.boolean() })
  .map(({ levels, width, maps }) => {
    const lines = [maps ? 'l0: &l0 {k: x}' : `l0: &l0 [${Array(width).fill('x').join(', ')}]`];
    for (let level = 1; level <= levels; level++) {
      const items = Array.from({ length: width }, (_, index) => (maps ? `k${index}: *l${level - 1}` : `*l${level - 1}`));
      lines.push(maps ? `l${level}: &l${level} {<<: *l${level - 1}, ${items.join(', ')}}` : `l${level}: &l${level} [${items.join(', ')}]`);
    }
    return lines.join('\n') + '\n';
  });

/** One wide anchor aliased many times: linear in the text, `size × aliases` values once expanded. */
const wideAliases = fc
  .record({ size: fc.integer({ min: 1, max: 30_000 }), aliases: fc.integer({ min: 1, max: 3_000 }) })
  .map(({ size, aliases }) => `a: &a [${Array(size).fill('x').join(',')}]\nb: [${Array(aliases).fill('*a').join(',')}]\n`);

/** A fragment repeated up to tens of thousands of times: inputs large enough for quadratic work to show. */
const repeated = fc
  .record({
    head: tokenText(10),
    fragment: fc.oneof(tokenText(8), fc.constantFrom('- &a x\n- *a\n', '- &a [x]\n', '- *a\n', 'k: &a {x: 1}\n', '- {<<: *a}\n')),
    count: fc.integer({ min: 1, max: 40_000 }),
  })
  .filter(({ fragment, count }) => fragment.length * count <= 2_000_000)
  .map(({ head, fragment, count }) => head + fragment.repeat(count));

/** Nesting from shallow to far deeper than any real file, in flow and block style. */
const deepText = fc
  .record({ depth: fc.integer({ min: 1, max: 20_000 }), style: fc.constantFrom('flow-seq', 'flow-map', 'block-seq', 'block-map') })
  .map(({ depth, style }) => {
    if (style === 'flow-seq') return '['.repeat(depth) + ']'.repeat(depth);
    if (style === 'flow-map') return '{a: '.repeat(depth) + '1' + '}'.repeat(depth);
    const line = (level: number) => ' '.repeat(level) + (style === 'block-seq' ? '-' : 'a:');
    return Array.from({ length: Math.min(depth, 3_000) }, (_, level) => line(level)).join('\n') + ' 1\n';
  });

/** Strings YAML 1.1 would read as something else when written plain. */
const trickyString = fc.oneof(
  fc.string(),
  fc.constantFrom('on', 'Off', 'yes', 'Y', 'n', '~', 'null', '0755', '0x1F', '1_000', '1e3', '.inf', '-.NaN', '12:30', '2001-12-14'),
  fc.constantFrom('<<', '=', '- a', 'a: b', '#c', ' x', 'x ', '', '\n', "'", '"', '*a', '&a', '!x', '%x', '@x', '`x', '? x', '[x', '{x'),
);
const jsonish = fc
  .jsonValue({ maxDepth: 6 })
  .chain((value) =>
    fc.oneof({ arbitrary: fc.constant(value), weight: 3 }, fc.dictionary(trickyString, fc.oneof(trickyString, fc.constant(value)))),
  );

function isYamlErrorFor(outcome: Outcome, source: string): boolean {
  return 'error' in outcome && outcome.error.name === 'YamlError' && outcome.error.message.startsWith(`${source}:`);
}

/** True when `value` has no cycle (the values are DAGs: an alias shares its anchor's value). */
function isAcyclic(value: unknown, onPath = new Set<object>(), done = new Set<object>()): boolean {
  if (typeof value !== 'object' || value === null || done.has(value)) return true;
  if (onPath.has(value)) return false;
  onPath.add(value);
  const acyclic = Object.values(value).every((child) => isAcyclic(child, onPath, done));
  onPath.delete(value);
  done.add(value);
  return acyclic;
}

/** The number of values in `value` with every shared value counted at each use, or Infinity past `limit`. */
function expandedSize(value: unknown, limit: number): number {
  let count = 0;
  const visit = (node: unknown): void => {
    if (++count > limit) throw new RangeError('limit');
    if (typeof node === 'object' && node !== null) for (const child of Object.values(node)) visit(child);
  };
  try {
    visit(value);
    return count;
  } catch {
    return Infinity;
  }
}

/** The parse of `text` ended in plain values within the limits, or in a YamlError naming the source. */
async function expectParsedOrRefused(text: string): Promise<Outcome> {
  const outcome = await sandbox.run('parseYamlDocuments', text, SOURCE);
  if ('error' in outcome) {
    expect(isYamlErrorFor(outcome, SOURCE), `${outcome.error.name}: ${outcome.error.message}`).toBe(true);
    return outcome;
  }
  expect(Array.isArray(outcome.value)).toBe(true);
  expect(isAcyclic(outcome.value)).toBe(true);
  // A document has fewer values than characters (plus one for the empty text); aliases may add MAX_ALIAS_EXPANSION.
  const limit = text.length + 1 + MAX_ALIAS_EXPANSION;
  expect(expandedSize(outcome.value, limit)).toBeLessThanOrEqual(limit);
  return outcome;
}

const TEXT: Budget = { runs: 2_000, ms: 6_000 };
const LARGE: Budget = { runs: 60, ms: 10_000 };
const ROUND_TRIP: Budget = { runs: 1_000, ms: 5_000 };

describe('parseYamlDocuments and parseYaml', () => {
  it(
    'end any text in values or a YamlError naming the source, and agree with each other',
    () =>
      fuzz(
        'yaml/any text',
        fc.asyncProperty(fc.oneof(anyText, aliasDocument), async (text) => {
          const documents = await expectParsedOrRefused(text);
          const single = await sandbox.run('parseYaml', text, SOURCE);
          if ('error' in documents) return void expect(single).toEqual(documents);
          const values = documents.value as unknown[];
          if (values.length <= 1) expect(single).toEqual({ value: values[0] });
          else expect(isYamlErrorFor(single, SOURCE)).toBe(true);
        }),
        TEXT,
      ),
    testTimeout(TEXT),
  );

  it(
    'bound what anchors, aliases and merge keys expand to, and the time resolving them takes',
    () =>
      fuzz(
        'yaml/aliases',
        fc.asyncProperty(fc.oneof(laughs, wideAliases, repeated), async (text) => {
          await expectParsedOrRefused(text);
        }),
        LARGE,
      ),
    testTimeout(LARGE),
  );

  it(
    'refuse nesting too deep for the stack with a YamlError',
    () =>
      fuzz(
        'yaml/deep nesting',
        fc.asyncProperty(deepText, async (text) => {
          await expectParsedOrRefused(text);
        }),
        LARGE,
      ),
    testTimeout(LARGE),
  );
});

describe('toYaml and toYamlDocuments', () => {
  it(
    'write JSON values that read back equal, YAML 1.1 words included',
    () =>
      fuzz(
        'yaml/round trip',
        // A document that is only `null` reads as no document (see parseYamlDocuments).
        fc.asyncProperty(
          jsonish.filter((value) => value !== null),
          async (value) => {
            const written = await sandbox.run('toYaml', value);
            expect(written).toHaveProperty('value');
            const text = (written as { value: string }).value;
            expect(await sandbox.run('parseYaml', text, SOURCE), text).toEqual({ value });
          },
        ),
        ROUND_TRIP,
      ),
    testTimeout(ROUND_TRIP),
  );

  it(
    'write streams of documents that read back equal',
    () =>
      fuzz(
        'yaml/document stream',
        fc.asyncProperty(fc.array(jsonish.filter((value) => value !== null)), async (values) => {
          const written = await sandbox.run('toYamlDocuments', values);
          expect(written).toHaveProperty('value');
          expect(await sandbox.run('parseYamlDocuments', (written as { value: string }).value, SOURCE)).toEqual({ value: values });
        }),
        ROUND_TRIP,
      ),
    testTimeout(ROUND_TRIP),
  );

  it(
    'write deeply nested values or refuse them with a plain Error, not a stack overflow',
    () =>
      fuzz(
        'yaml/deep values',
        fc.asyncProperty(fc.integer({ min: 1, max: 20_000 }), fc.boolean(), async (depth, maps) => {
          const json = (maps ? '{"a":' : '[').repeat(depth) + '"leaf"' + (maps ? '}' : ']').repeat(depth);
          const written = await sandbox.run('toYamlJson', json);
          if ('error' in written) expect(written.error.name, written.error.message).toBe('Error');
          else expect(typeof written.value).toBe('string');
        }),
        LARGE,
      ),
    testTimeout(LARGE),
  );
});

/** A document of string leaves, written in one of the styles people write by hand. */
const styledDocument = fc.record({
  value: fc.dictionary(
    fc.constantFrom('a', 'b', 'c', 'helmChart'),
    fc.oneof(
      trickyString,
      fc.array(trickyString, { minLength: 1, maxLength: 3 }),
      fc.dictionary(fc.constantFrom('chartVersion', 'x', 'y'), trickyString, { minKeys: 1, maxKeys: 3 }),
    ),
    { minKeys: 1, maxKeys: 4 },
  ),
  flow: fc.boolean(),
  stringType: fc.constantFrom(Scalar.PLAIN, Scalar.QUOTE_DOUBLE, Scalar.QUOTE_SINGLE, Scalar.BLOCK_LITERAL, Scalar.BLOCK_FOLDED),
});

/** Paths (as replaceScalar takes them) of every string leaf. */
function leafPaths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value === 'string') return [prefix];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, [...prefix, key]));
}

function withLeaf(value: unknown, path: readonly string[], leaf: string): unknown {
  const [key, ...rest] = path;
  if (key === undefined) return leaf;
  const copy = structuredClone(value) as Record<string, unknown>;
  copy[key] = withLeaf(copy[key], rest, leaf);
  return copy;
}

describe('replaceScalar', () => {
  it(
    'changes exactly the scalar at the path, whatever the new text and the style around it, or refuses',
    () =>
      fuzz(
        'yaml/replace scalar',
        fc.asyncProperty(styledDocument, fc.nat(), trickyString, async ({ value, flow, stringType }, pick, replacement) => {
          const text = stringify(value, { version: '1.1', collectionStyle: flow ? 'flow' : 'block', defaultStringType: stringType });
          // The document as the text reads (the library's writer does not always keep a blank block scalar's spaces).
          const before = await sandbox.run('parseYaml', text, SOURCE);
          expect(before).toHaveProperty('value');
          const paths = leafPaths(value);
          const path = paths[pick % paths.length] as string[];
          const outcome = await sandbox.run('replaceScalar', text, path, replacement, SOURCE);
          if ('error' in outcome) {
            expect(outcome.error.message.startsWith(`${SOURCE}:`), outcome.error.message).toBe(true);
            expect(outcome.error.name).not.toMatch(/^(TypeError|RangeError|ReferenceError|SyntaxError)$/);
            return;
          }
          const reread = await sandbox.run('parseYaml', outcome.value, SOURCE);
          const expected = withLeaf((before as { value: unknown }).value, path, replacement);
          expect(reread, `${text}\n→\n${outcome.value as string}`).toEqual({ value: expected });
        }),
        ROUND_TRIP,
      ),
    testTimeout(ROUND_TRIP),
  );
});
