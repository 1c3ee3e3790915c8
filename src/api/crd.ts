/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) from the TypeBox schemas the code validates with, so the API
 * server, `kubectl explain` and the controller agree on one definition.
 *
 * The API server accepts only structural schemas (Kubernetes docs, "Specifying a structural schema"): every node
 * has a type (unless it preserves unknown fields or is int-or-string), no anyOf/oneOf carries types or
 * descriptions, no `$ref`/`$id`/`const`/`patternProperties`, `additionalProperties` never beside `properties`.
 * `toCrdSchema` rewrites the JSON Schema TypeBox produces into that form and throws, naming the path, on anything
 * it cannot express rather than dropping a constraint silently; the only constraints it drops are those the code's
 * own validation still checks (see `mergeStrings`).
 */
import type { TSchema } from 'typebox';

/** A node of an openAPIV3Schema (apiextensions.k8s.io/v1 JSONSchemaProps), as far as the generator emits them. */
export interface CrdSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, CrdSchema>;
  required?: string[];
  items?: CrdSchema;
  additionalProperties?: CrdSchema;
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  [keyword: string]: unknown;
}

/**
 * The schema keyword marking a field Gantry accepts but does not act on (a field of another project's manifests, such
 * as Plural's); its value is an UnsupportedMark. The CRD leaves it out and says so in the field's description.
 */
export const UNSUPPORTED = 'x-gantry-unsupported';

/** Why a field is not acted on, and what that does to the resource. */
export interface UnsupportedMark {
  /** Says why, or what it would take; shown in the condition and the CRD's description. */
  reason: string;
  /**
   * The field changes what is deployed or where (a render step, a narrower set of clusters): while it is set the
   * resource is Synchronized=False and nothing is sent, since applying other objects or reaching other clusters than
   * the manifest says is worse than applying nothing.
   */
  blocks: boolean;
  /** Only these values are unsupported (others are what Gantry does anyway, e.g. `ignoreHooks: false`). */
  when?: unknown[];
  /** Every value but these is unsupported (an open list of names of which Gantry knows some). */
  unless?: unknown[];
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  /** 0 shows it in `kubectl get`; higher only with `-o wide`. */
  priority?: number;
}

export interface CrdVersionDefinition {
  name: string;
  spec: TSchema;
  status?: TSchema;
  printerColumns?: PrinterColumn[];
  /** Defaults: the first version is the storage version; every version is served. */
  served?: boolean;
  storage?: boolean;
}

export interface CrdDefinition {
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  scope: 'Namespaced' | 'Cluster';
  /** Shown by `kubectl explain <kind>`. */
  description?: string;
  versions: CrdVersionDefinition[];
}

/**
 * A CustomResourceDefinition with a structural schema per version and the status subresource on (so status is
 * written only through `/status` and spec changes alone bump metadata.generation).
 * @throws Error naming the schema path of anything a structural schema cannot express.
 */
export function customResourceDefinition(definition: CrdDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${definition.plural}.${definition.group}` },
    spec: {
      group: definition.group,
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        ...(definition.shortNames?.length ? { shortNames: definition.shortNames } : {}),
      },
      scope: definition.scope,
      versions: definition.versions.map((version, index) => ({
        name: version.name,
        served: version.served ?? true,
        storage: version.storage ?? index === 0,
        schema: { openAPIV3Schema: rootSchema(definition, version) },
        subresources: { status: {} },
        ...(version.printerColumns?.length ? { additionalPrinterColumns: version.printerColumns } : {}),
      })),
    },
  };
}

function rootSchema(definition: CrdDefinition, version: CrdVersionDefinition): CrdSchema {
  const kind = definition.kind;
  const spec = toCrdSchema(version.spec, 'spec');
  const properties: Record<string, CrdSchema> = {
    apiVersion: { type: 'string', description: `Versioned schema of this object: ${definition.group}/${version.name}.` },
    kind: { type: 'string', description: `Kind of this object: ${kind}.` },
    // The API server owns metadata's schema; a CRD may not restrict it beyond name and generateName.
    metadata: { type: 'object' },
    spec: { ...spec, description: spec.description ?? `Desired state of the ${kind}.` },
  };
  if (version.status) {
    const status = toCrdSchema(version.status, 'status');
    properties['status'] = { ...status, description: status.description ?? `Observed state of the ${kind}, written by the controller.` };
  }
  return {
    type: 'object',
    description: definition.description ?? `${kind} (${definition.group}/${version.name}).`,
    properties,
    required: ['spec'],
  };
}

/** Keywords copied unchanged: they mean the same in JSON Schema and in the CRD dialect of OpenAPI v3. */
const COPIED = [
  'description',
  'default',
  'title',
  'example',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'multipleOf',
  'nullable',
];
/** Keywords without meaning for the API server: identifiers and JSON Schema's example lists. */
const DROPPED = ['$id', '$schema', 'examples'];
/**
 * Formats the API server validates (apiextensions-apiserver pkg/apiserver/validation/formats.go, compared without
 * dashes). Others it accepts with an "unrecognized format" warning and ignores, so they are left out.
 */
const KNOWN_FORMATS = new Set(
  [
    'bsonobjectid',
    'uri',
    'email',
    'hostname',
    'ipv4',
    'ipv6',
    'cidr',
    'mac',
    'uuid',
    'uuid3',
    'uuid4',
    'uuid5',
    'isbn',
    'isbn10',
    'isbn13',
    'creditcard',
    'ssn',
    'hexcolor',
    'rgbcolor',
    'byte',
    'password',
    'date',
    'duration',
    'datetime',
    'k8s-short-name',
    'k8s-long-name',
  ].map((format) => format.replaceAll('-', '')),
);
const PRIMITIVE_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

type JsonSchema = Record<string, unknown>;

/**
 * Rewrites a TypeBox (JSON Schema) node into a structural CRD schema node: unions of literals become `enum`,
 * unions of strings one string, a union with null `nullable`, integer-or-string `x-kubernetes-int-or-string`,
 * Records `additionalProperties`, exclusive bounds the OpenAPI v3 booleans; `x-kubernetes-*` extensions are kept.
 * `path` names the node in errors (e.g. `spec.source.git`).
 * @throws Error for intersections, `not`, tuples, `uniqueItems`, untyped nodes without
 *   `x-kubernetes-preserve-unknown-fields`, unions of other shapes, and unknown keywords.
 */
export function toCrdSchema(schema: TSchema | JsonSchema, path: string): CrdSchema {
  const node = schema as JsonSchema;
  if (Array.isArray(node['anyOf']) || Array.isArray(node['oneOf'])) return convertUnion(node, path);
  const result: CrdSchema = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (COPIED.includes(keyword)) result[keyword] = value;
    else if (keyword.startsWith('x-kubernetes-')) result[keyword] = value;
    else if (DROPPED.includes(keyword)) continue;
    else if (keyword === UNSUPPORTED) continue;
    else if (!convertKeyword(node, keyword, value, result, path))
      throw new Error(`${path}: '${keyword}' cannot be expressed in a CRD schema`);
  }
  describeUnsupported(node, result);
  if (result.enum && !result.type) result.type = typeOfValues(result.enum, path);
  requireType(result, path);
  return result;
}

/** A field Gantry does not act on (src/api/fleet.ts `unsupported`) says so in its description, for `kubectl explain`. */
function describeUnsupported(node: JsonSchema, result: CrdSchema): void {
  const mark = node[UNSUPPORTED] as UnsupportedMark | undefined;
  if (!mark) return;
  const values = mark.when ? ` (${mark.when.join(', ')})` : mark.unless ? ` (other than ${mark.unless.join(', ')})` : '';
  const note = `Not supported by Gantry${values}: ${mark.reason}${mark.blocks ? '; nothing is sent while it is set' : ''}.`;
  result.description = result.description ? `${result.description} ${note}` : note;
}

/** Handles the keywords that change shape; false for a keyword it does not know. */
function convertKeyword(node: JsonSchema, keyword: string, value: unknown, result: CrdSchema, path: string): boolean {
  switch (keyword) {
    case 'type':
      if (typeof value !== 'string' || !(PRIMITIVE_TYPES.has(value) || value === 'object' || value === 'array')) {
        throw new Error(`${path}: type ${JSON.stringify(value)} cannot be expressed in a CRD schema (null only as part of a union)`);
      }
      result.type = value as CrdSchema['type'];
      return true;
    case 'const':
      result.enum = [value];
      return true;
    case 'enum':
      result.enum = value as unknown[];
      return true;
    case 'format':
      if (KNOWN_FORMATS.has(String(value).replaceAll('-', ''))) result['format'] = value;
      return true;
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      // JSON Schema's exclusive bound is a number; OpenAPI v3's is a flag on minimum/maximum.
      result[keyword === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
      result[keyword] = true;
      return true;
    case 'properties':
      result.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, property]) => [name, toCrdSchema(property, `${path}.${name}`)]),
      );
      return true;
    case 'required':
      if ((value as string[]).length > 0) result.required = value as string[];
      return true;
    case 'additionalProperties':
      // Pruning drops unknown fields anyway, and the API server forbids false beside properties.
      if (value === false || value === true) return true;
      if (node['properties']) throw new Error(`${path}: additionalProperties beside properties cannot be expressed in a CRD schema`);
      result.additionalProperties = toCrdSchema(value as JsonSchema, `${path}.*`);
      return true;
    case 'patternProperties': {
      // A Record: CRDs cannot restrict the keys, the code's validation still does.
      const values = Object.values(value as Record<string, JsonSchema>);
      if (values.length !== 1 || node['properties'])
        throw new Error(`${path}: patternProperties other than one Record cannot be expressed in a CRD schema`);
      result.additionalProperties = toCrdSchema(values[0] as JsonSchema, `${path}.*`);
      return true;
    }
    case 'items':
      if (Array.isArray(value)) throw new Error(`${path}: tuples cannot be expressed in a CRD schema`);
      result.items = toCrdSchema(value as JsonSchema, `${path}[]`);
      return true;
    case 'uniqueItems':
      if (value === true) throw new Error(`${path}: uniqueItems is forbidden in CRDs; use 'x-kubernetes-list-type': 'set'`);
      return true;
    default:
      return false;
  }
}

function requireType(result: CrdSchema, path: string): void {
  if (result.type || result['x-kubernetes-preserve-unknown-fields'] === true || result['x-kubernetes-int-or-string'] === true) return;
  throw new Error(`${path}: a CRD schema node needs a type; give it one or 'x-kubernetes-preserve-unknown-fields': true`);
}

/** Keywords of a union node that describe the whole union rather than a member. */
const UNION_OUTER = ['description', 'default', 'title', 'example'];

function convertUnion(node: JsonSchema, path: string): CrdSchema {
  const members = ((node['anyOf'] ?? node['oneOf']) as JsonSchema[]).map((member, index) => ({ member, path: `${path}<${index}>` }));
  for (const keyword of Object.keys(node)) {
    if (
      keyword !== 'anyOf' &&
      keyword !== 'oneOf' &&
      keyword !== UNSUPPORTED &&
      !UNION_OUTER.includes(keyword) &&
      !keyword.startsWith('x-kubernetes-')
    ) {
      throw new Error(`${path}: '${keyword}' beside a union cannot be expressed in a CRD schema`);
    }
  }
  const nonNull = members.filter(({ member }) => member['type'] !== 'null');
  let merged: CrdSchema;
  if (nonNull.length === 0) throw new Error(`${path}: a union of only null cannot be expressed in a CRD schema`);
  else if (nonNull.every(({ member }) => isLiteral(member)))
    merged = mergeLiterals(
      nonNull.map(({ member }) => member),
      path,
    );
  else if (nonNull.every(({ member }) => member['type'] === 'string')) merged = mergeStrings(nonNull, path);
  else if (isIntOrString(nonNull.map(({ member }) => member))) merged = { 'x-kubernetes-int-or-string': true };
  else if (nonNull.length === 1) merged = toCrdSchema(nonNull[0]!.member, path);
  else
    throw new Error(
      `${path}: a union of ${nonNull.map(({ member }) => String(member['type'] ?? 'untyped')).join(', ')} cannot be expressed in a CRD schema`,
    );
  for (const keyword of Object.keys(node))
    if (keyword !== 'anyOf' && keyword !== 'oneOf' && keyword !== UNSUPPORTED) merged[keyword] = node[keyword];
  describeUnsupported(node, merged);
  if (nonNull.length < members.length) merged.nullable = true;
  return merged;
}

function isLiteral(member: JsonSchema): boolean {
  return member['const'] !== undefined || Array.isArray(member['enum']);
}

function mergeLiterals(members: JsonSchema[], path: string): CrdSchema {
  const values = members.flatMap((member) => (member['const'] !== undefined ? [member['const']] : (member['enum'] as unknown[])));
  return { type: typeOfValues(values, path), enum: [...new Set(values)] };
}

/** String constraints a merged union keeps only when every member has the same value. */
const STRING_KEYWORDS = ['type', 'pattern', 'format', 'minLength', 'maxLength', 'description'];

/**
 * One string for a union of strings: it accepts what any member accepts. Patterns combine into one alternation
 * (none when a member has none); other constraints stay only where all members agree, the rest is left to the
 * code's validation.
 */
function mergeStrings(members: Array<{ member: JsonSchema; path: string }>, path: string): CrdSchema {
  for (const { member, path: memberPath } of members) {
    const unknown = Object.keys(member).find((keyword) => !STRING_KEYWORDS.includes(keyword));
    if (unknown) throw new Error(`${memberPath}: '${unknown}' in a union of strings cannot be expressed in a CRD schema`);
  }
  const result: CrdSchema = { type: 'string' };
  const patterns = members.map(({ member }) => member['pattern'] as string | undefined);
  if (patterns.every((pattern) => pattern !== undefined)) {
    const distinct = [...new Set(patterns)];
    result['pattern'] = distinct.length === 1 ? distinct[0] : distinct.map((pattern) => `(?:${pattern})`).join('|');
  }
  for (const keyword of ['format', 'minLength', 'maxLength']) {
    const values = new Set(members.map(({ member }) => member[keyword]));
    const [only] = values;
    if (values.size === 1 && only !== undefined && (keyword !== 'format' || KNOWN_FORMATS.has(String(only).replaceAll('-', ''))))
      result[keyword] = only;
  }
  return result;
}

function isIntOrString(members: JsonSchema[]): boolean {
  const types = members.map((member) => member['type']).sort();
  return (
    members.length === 2 && types[0] === 'integer' && types[1] === 'string' && members.every((member) => Object.keys(member).length === 1)
  );
}

function typeOfValues(values: unknown[], path: string): CrdSchema['type'] {
  const types = new Set(
    values.map((value) => (typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value)),
  );
  if (types.size === 2 && types.has('integer') && types.has('number')) return 'number';
  const [only] = types;
  if (types.size !== 1 || !PRIMITIVE_TYPES.has(only as string))
    throw new Error(`${path}: an enum of ${[...types].join(' and ')} values cannot be expressed in a CRD schema`);
  return only as CrdSchema['type'];
}
