/**
 * All YAML reading and writing goes through this module, because Kubernetes and Kluctl read YAML 1.1 (Go's
 * sigs.k8s.io/yaml): `on`, `yes`, `y` are booleans and `0755` is octal there, while a YAML 1.2 parser would keep
 * them as strings and send different objects to the API server. Two 1.1 features Go's decoder does not have are
 * dropped: timestamps (stay strings) and sexagesimal numbers (`12:30` stays a string).
 * Writing uses 1.1 too, so a string such as "on" is quoted and survives a round trip through kubectl.
 */
import { isDeepStrictEqual } from 'node:util';
import {
  Document,
  isAlias,
  isCollection,
  isPair,
  isScalar,
  LineCounter,
  parseAllDocuments,
  parseDocument,
  Scalar,
  visit,
  type Alias,
  type ScalarTag,
  type Tags,
  type ToStringOptions,
} from 'yaml';

/** A YAML document that could not be parsed; the message names the source and line. */
export class YamlError extends Error {
  readonly source: string;
  readonly line: number | undefined;

  constructor(source: string, line: number | undefined, reason: string) {
    super(`${source}${line === undefined ? '' : `:${line}`}: invalid YAML: ${reason}`);
    this.name = 'YamlError';
    this.source = source;
    this.line = line;
  }
}

function goCompatibleTags(tags: Tags): Tags {
  return tags.filter((tag) => {
    if (typeof tag !== 'object') return true;
    return tag.tag !== 'tag:yaml.org,2002:timestamp' && tag.format !== 'TIME';
  });
}

/**
 * `!!binary` as Go's decoder reads it: the decoded bytes as a string, and an error for invalid base64. The yaml
 * library gives a Uint8Array, which is no JSON value: schema checks then fail without a problem to name.
 */
const goBinary: ScalarTag = {
  tag: 'tag:yaml.org,2002:binary',
  identify: () => false,
  resolve(text, onError) {
    // Go's base64 decoder skips line breaks, nothing else.
    const base64 = text.replace(/[\r\n]/g, '');
    if (base64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) onError('!!binary value contains invalid base64 data');
    return Buffer.from(base64, 'base64').toString('utf8');
  },
};

function parseTags(tags: Tags): Tags {
  return goCompatibleTags(tags).map((tag) => (typeof tag === 'object' && tag.tag === goBinary.tag ? goBinary : tag));
}

const parseOptions = { version: '1.1', customTags: parseTags, merge: true, uniqueKeys: true } as const;

/** Writing knows no merge keys: a `<<` key is data there, written quoted (see toYaml). */
function writeTags(tags: Tags): Tags {
  return goCompatibleTags(tags).filter((tag) => typeof tag !== 'object' || tag.tag !== 'tag:yaml.org,2002:merge');
}

const writeOptions: ToStringOptions & { version: '1.1'; customTags: typeof writeTags } = {
  version: '1.1',
  customTags: writeTags,
  lineWidth: 0,
  minContentWidth: 0,
  indentSeq: true,
};

/**
 * How many values alias expansion may add to one document (each alias counts the values of its anchor; a merge key
 * those of the maps it merges). The parsed values share an anchor's value between its aliases, but whatever walks
 * them (JSON, templates, deep merges, writing YAML) expands every use: a few kilobytes of nested aliases would
 * otherwise become gigabytes there. Go's decoder, which Kluctl uses, refuses expansion of the same order.
 */
export const MAX_ALIAS_EXPANSION = 1_000_000;

/**
 * The yaml library resolves each alias by scanning the anchors and aliases before it, so a document of n of them
 * costs n²/2 steps (a megabyte of `- &a x` / `- *a` lines takes minutes); documents past this many steps are refused.
 */
const MAX_ALIAS_SCAN = 20_000_000;

/**
 * Parses a multi-document YAML text into plain JS values, skipping empty documents (`---` alone, comments).
 * Aliases share their anchor's value; an alias inside its own anchor, or one expanding the document by more than
 * MAX_ALIAS_EXPANSION values, is refused rather than returned (a cycle or an expansion would break whatever walks
 * the values).
 * @param source file name (or other label) used in error messages.
 * @throws YamlError naming `source` (and the 1-based line where known) for invalid YAML, an alias without its
 *   anchor, a self-referencing or over-expanding alias, an invalid merge, or nesting too deep to convert.
 */
export function parseYamlDocuments(text: string, source: string): unknown[] {
  const lineCounter = new LineCounter();
  const lineOf = (offset: number) => lineCounter.linePos(offset).line;
  // Not prettyErrors: it copies the error's whole line into every error, quadratic on a long line of errors.
  const documents = parseAllDocuments(text, { ...parseOptions, prettyErrors: false, lineCounter });
  if (!Array.isArray(documents)) return [];
  const values: unknown[] = [];
  for (const document of documents) {
    const error = document.errors[0];
    if (error) throw new YamlError(source, lineOf(error.pos[0]), firstLine(error.message));
    const value = toValue(document, text.includes('*'), lineOf, source);
    if (value !== null && value !== undefined) values.push(value);
  }
  return values;
}

function toValue(document: Document.Parsed, mayHaveAliases: boolean, lineOf: (offset: number) => number, source: string): unknown {
  try {
    if (mayHaveAliases) checkAliases(document, lineOf, source);
    return document.toJS({ maxAliasCount: -1 });
  } catch (error) {
    if (error instanceof YamlError) throw error;
    throw new YamlError(source, undefined, firstLine((error as Error).message));
  }
}

/**
 * Finds each alias's anchor as the yaml library does (the nearest one before it in document order), then counts
 * what the aliases expand to, each anchor's size computed once.
 * @throws YamlError for an alias without anchor, an alias inside its own anchor, or the limits above.
 */
function checkAliases(document: Document.Parsed, lineOf: (offset: number) => number, source: string): void {
  const anchors = new Map<string, unknown>();
  const targets = new Map<Alias, unknown>();
  let nodes = 0;
  let listed = 0;
  let scan = 0;
  visit(document, {
    Node(_key, node) {
      if (isAlias(node)) {
        const target = anchors.get(node.source);
        if (target === undefined) {
          throw new YamlError(source, lineOf(node.range?.[0] ?? 0), `alias *${node.source} has no anchor &${node.source} before it`);
        }
        targets.set(node, target);
        scan += listed++;
        if (scan > MAX_ALIAS_SCAN) throw new YamlError(source, lineOf(node.range?.[0] ?? 0), `too many anchors and aliases to resolve`);
      } else {
        nodes++;
        if (node.anchor) {
          anchors.set(node.anchor, node);
          listed++;
        }
      }
    },
  });
  if (targets.size === 0) return;
  const sizes = new Map<unknown, number>();
  const enclosing = new Set<unknown>();
  const size = (node: unknown): number => {
    if (isAlias(node)) {
      const target = targets.get(node);
      if (enclosing.has(target))
        throw new YamlError(source, lineOf(node.range?.[0] ?? 0), `alias *${node.source} is inside its own anchor`);
      return size(target);
    }
    if (isPair(node)) return size(node.key) + size(node.value);
    if (node === null || node === undefined) return 0;
    if (!isCollection(node)) return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    enclosing.add(node);
    let total = 1;
    for (const item of node.items) total += size(item);
    enclosing.delete(node);
    sizes.set(node, total);
    return total;
  };
  const added = size(document.contents) - nodes;
  if (added > MAX_ALIAS_EXPANSION) {
    throw new YamlError(source, undefined, `aliases expand the document by ${added} values, more than the ${MAX_ALIAS_EXPANSION} allowed`);
  }
}

/**
 * Parses a single-document YAML text; an empty text gives `undefined`.
 * @throws YamlError as parseYamlDocuments, or when the text holds more than one document.
 */
export function parseYaml(text: string, source: string): unknown {
  const values = parseYamlDocuments(text, source);
  if (values.length > 1) throw new YamlError(source, undefined, `expected one document, found ${values.length}`);
  return values[0];
}

/**
 * Writes one value as a YAML 1.1 document (no leading `---`). A `<<` key is quoted, as a plain one would read back
 * as a merge key.
 * @throws Error for a value YAML cannot hold or one nested too deeply to write.
 */
export function toYaml(value: unknown): string {
  try {
    const document = new Document(value, { ...writeOptions, aliasDuplicateObjects: false });
    visit(document, {
      Pair(_key, pair) {
        if (isScalar(pair.key) && pair.key.value === '<<') pair.key.type = Scalar.QUOTE_DOUBLE;
      },
    });
    return document.toString(writeOptions);
  } catch (error) {
    throw new Error(`cannot write YAML: ${(error as Error).message}`);
  }
}

/** Writes values as a multi-document YAML stream, each document introduced by `---`. */
export function toYamlDocuments(values: readonly unknown[]): string {
  return values.map((value) => `---\n${toYaml(value)}`).join('');
}

/**
 * Replaces the scalar at `path` in a YAML text by `value`, leaving every other byte as it was (comments, order,
 * quoting of other values), for edits of files people maintain by hand. The scalar keeps its quoting style; a
 * plain scalar gets quotes when `value` would otherwise read as something other than that string (e.g. `1.10`).
 * The result is read back: when the scalar's style cannot hold `value` there (a `]` in a flow list, a line break in
 * single quotes), the value is written double-quoted instead.
 * @throws Error naming `source` when there is no scalar at `path`, the text is not valid YAML, or no quoting keeps
 *   the rest of the document as it was.
 */
export function replaceScalar(text: string, path: readonly string[], value: string, source: string): string {
  const document = parseDocument(text, { ...parseOptions });
  const node = document.getIn(path, true);
  if (!isScalar(node) || !node.range) throw new Error(`${source}: ${path.join('.')} is not a plain value`);
  const expected = withValueAt(parseYaml(text, source), path, value);
  const [start, end] = node.range;
  // A block scalar's range ends with its line break(s), which the next line needs.
  const replaced = text.slice(start, end);
  const lineBreaks =
    node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED ? replaced.slice(replaced.trimEnd().length) : '';
  for (const written of [scalarText(value, node.type), JSON.stringify(value)]) {
    const candidate = text.slice(0, start) + written + lineBreaks + text.slice(end);
    if (readsAs(candidate, expected)) return candidate;
  }
  throw new Error(`${source}: ${path.join('.')}: cannot write ${JSON.stringify(value)} there without changing the rest of the document`);
}

function withValueAt(root: unknown, path: readonly string[], value: string): unknown {
  const [key, ...rest] = path;
  if (key === undefined) return value;
  const copy = (Array.isArray(root) ? [...(root as unknown[])] : { ...(root as Record<string, unknown>) }) as Record<string, unknown>;
  // Defined, not assigned: a `__proto__` key is data here.
  Object.defineProperty(copy, key, { value: withValueAt(copy[key], rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
}

function readsAs(text: string, expected: unknown): boolean {
  try {
    return isDeepStrictEqual(parseYaml(text, 'candidate'), expected);
  } catch {
    return false;
  }
}

function scalarText(value: string, type: Scalar['type']): string {
  if (type === Scalar.QUOTE_SINGLE) return `'${value.replaceAll("'", "''")}'`;
  if (type === Scalar.PLAIN && readsAsString(value)) return value;
  return JSON.stringify(value);
}

function readsAsString(value: string): boolean {
  try {
    return parseYaml(value, 'value') === value;
  } catch {
    return false;
  }
}

/** The library's message repeats the position we already print; keep only its first sentence. */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
}
