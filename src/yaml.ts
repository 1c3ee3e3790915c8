/**
 * All YAML reading and writing goes through this module, because Kubernetes and Kluctl read YAML 1.1 (Go's
 * sigs.k8s.io/yaml): `on`, `yes`, `y` are booleans and `0755` is octal there, while a YAML 1.2 parser would keep
 * them as strings and send different objects to the API server. Two 1.1 features Go's decoder does not have are
 * dropped: timestamps (stay strings) and sexagesimal numbers (`12:30` stays a string).
 * Writing uses 1.1 too, so a string such as "on" is quoted and survives a round trip through kubectl.
 */
import { isScalar, parseAllDocuments, parseDocument, Scalar, stringify, type Tags, type ToStringOptions } from 'yaml';

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

const parseOptions = { version: '1.1', customTags: goCompatibleTags, merge: true, uniqueKeys: true } as const;

const writeOptions: ToStringOptions & { version: '1.1'; customTags: typeof goCompatibleTags } = {
  version: '1.1',
  customTags: goCompatibleTags,
  lineWidth: 0,
  minContentWidth: 0,
  indentSeq: true,
};

/**
 * Parses a multi-document YAML text into plain JS values, skipping empty documents (`---` alone, comments).
 * @param source file name (or other label) used in error messages.
 * @throws YamlError naming `source` and the 1-based line of the first error.
 */
export function parseYamlDocuments(text: string, source: string): unknown[] {
  const documents = parseAllDocuments(text, { ...parseOptions, prettyErrors: true });
  if (!Array.isArray(documents)) return [];
  const values: unknown[] = [];
  for (const document of documents) {
    const error = document.errors[0];
    if (error) throw new YamlError(source, error.linePos?.[0].line, firstLine(error.message));
    const value: unknown = document.toJS({ maxAliasCount: 1000 });
    if (value !== null && value !== undefined) values.push(value);
  }
  return values;
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

/** Writes one value as a YAML 1.1 document (no leading `---`). */
export function toYaml(value: unknown): string {
  return stringify(value, { ...writeOptions, aliasDuplicateObjects: false });
}

/** Writes values as a multi-document YAML stream, each document introduced by `---`. */
export function toYamlDocuments(values: readonly unknown[]): string {
  return values.map((value) => `---\n${toYaml(value)}`).join('');
}

/**
 * Replaces the scalar at `path` in a YAML text by `value`, leaving every other byte as it was (comments, order,
 * quoting of other values), for edits of files people maintain by hand. The scalar keeps its quoting style; a
 * plain scalar gets quotes when `value` would otherwise read as something other than that string (e.g. `1.10`).
 * @throws Error naming `source` when there is no scalar at `path`.
 */
export function replaceScalar(text: string, path: readonly string[], value: string, source: string): string {
  const document = parseDocument(text, { ...parseOptions });
  const node = document.getIn(path, true);
  if (!isScalar(node) || !node.range) throw new Error(`${source}: ${path.join('.')} is not a plain value`);
  const [start, end] = node.range;
  return text.slice(0, start) + scalarText(value, node.type) + text.slice(end);
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
