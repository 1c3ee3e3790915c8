/**
 * Server-side apply conflicts, resolved as Kluctl resolves them: when the API server refuses an apply because
 * other field managers own some of the fields (409, one cause per field), each conflicting field is either
 * force-applied (the object's `kluctl.io/force-apply`, `-field`, `-manager` annotations or a `force-apply`
 * conflictResolution rule say so, or the other owner is a human editor such as kubectl) or given up: removed from
 * what Gantry applies, with a warning when the values differ (unless an `ignore` rule or `kluctl.io/ignore-conflicts*`
 * annotation silences it). The object is then applied again with force, which only takes the fields it still holds.
 *
 * The API server names a field by structured-merge-diff's path string (`.spec.template.spec.containers[name="app"].image`);
 * it is found in the live object's managedFields (fieldsV1), which also tell who owns it.
 */
import type { KubeObject } from '../kube/object.ts';
import { isPlainObject } from '../values.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';
import type { ConflictResolutionConfig } from '../project/schema.ts';
import {
  allFieldPaths,
  asList,
  deleteField,
  formatFieldPath,
  getField,
  matchesObject,
  matchJsonPath,
  samePath,
  type FieldPath,
} from './field-paths.ts';

/** A conflictResolution entry of deployment.yaml (kluctl's deployment-yml docs); paths and managers may be one or a list. */
export type ConflictRule = ConflictResolutionConfig;

export interface ConflictCause {
  field: string;
  message: string;
}

export interface ConflictResolution {
  /** The object to apply again (with force): given-up fields removed. */
  object: KubeObject;
  /** Fields whose value Gantry wanted but no longer owns. */
  lostOwnership: Array<{ field: string; message: string }>;
}

/** Managers whose fields are taken over without asking: people editing by hand (Kluctl's list). */
const HUMAN_EDITORS = [/^kluctl$/, /^kluctl-.*$/, /^kubectl$/, /^kubectl-.*$/, /^rancher$/, /^k9s$/];

/**
 * Resolves the `causes` of a conflicted apply of `local` against the live object `remote`.
 * @throws Error naming the field when a cause cannot be found in the live object's managed fields.
 */
export function resolveConflicts(
  local: KubeObject,
  remote: KubeObject,
  causes: readonly ConflictCause[],
  rules: readonly ConflictRule[],
): ConflictResolution {
  const owned = ownedFields(remote);
  const applicable = [...rules, ...annotationRules(local)].filter((rule) => matchesObject(rule, local));
  const result = structuredClone(local);
  const removals: FieldPath[] = [];
  const lostOwnership: ConflictResolution['lostOwnership'] = [];
  for (const cause of causes) {
    const field = owned.get(cause.field);
    if (!field) throw new Error(`${cause.message}: field '${cause.field}' not found in the object's managed fields`);
    const localPath = locate(local, field.elements);
    const remotePath = locate(remote, field.elements);
    if (!localPath || !remotePath)
      throw new Error(`${cause.message}: field '${cause.field}' not found in the ${localPath ? 'live' : 'rendered'} object`);
    const action = decide(applicable, local, remote, localPath, field.managers);
    if (action === 'force-apply') continue;
    removals.push(localPath);
    const differs = JSON.stringify(getField(local, localPath)) !== JSON.stringify(getField(remote, remotePath));
    if (differs && action !== 'ignore') lostOwnership.push({ field: cause.field, message: cause.message });
  }
  // Deleting from the end keeps the indexes of earlier list items valid.
  for (const path of removals.sort(compareForDeletion)) deleteField(result, path);
  return { object: result, lostOwnership };
}

/**
 * The field managers of `live` that own one of `paths` (or a field inside one), from its managedFields, in the
 * order they appear there. A path `live` lacks has no owner.
 */
export function fieldOwners(live: KubeObject, paths: readonly FieldPath[]): string[] {
  const owners = new Set<string>();
  for (const { elements, managers } of ownedFields(live).values()) {
    const located = locate(live, elements);
    if (located && paths.some((path) => samePath(located.slice(0, path.length), path))) for (const manager of managers) owners.add(manager);
  }
  return [...owners];
}

/**
 * The fields `manifest` sets that, in `live`, other managers own and `fieldManager` does not: those a conflicting
 * apply gave up to them (see resolveConflicts), with those managers.
 */
export function fieldsOwnedByOthers(
  live: KubeObject,
  manifest: KubeObject,
  fieldManager: string,
): { fields: FieldPath[]; managers: string[] } {
  const ownersAt = new Map<string, { path: FieldPath; managers: string[] }>();
  for (const { elements, managers } of ownedFields(live).values()) {
    const located = locate(live, elements);
    if (located) ownersAt.set(JSON.stringify(located), { path: located, managers });
  }
  const fields: FieldPath[] = [];
  const others = new Set<string>();
  for (const path of allFieldPaths(manifest)) {
    const managers = ownersAt.get(JSON.stringify(path))?.managers;
    if (!managers || managers.length === 0 || managers.includes(fieldManager) || !isLeaf(getField(manifest, path))) continue;
    fields.push(path);
    for (const manager of managers) others.add(manager);
  }
  return { fields, managers: [...others] };
}

function isLeaf(value: unknown): boolean {
  return !isPlainObject(value) && !Array.isArray(value);
}

function decide(
  rules: readonly ConflictRule[],
  local: KubeObject,
  remote: KubeObject,
  path: FieldPath,
  managers: readonly string[],
): 'ignore' | 'force-apply' | undefined {
  let action: ConflictRule['action'] | undefined;
  for (const rule of rules) if (ruleMatchesField(rule, local, remote, path, managers)) action = rule.action;
  if (action !== 'ignore' && managers.some((manager) => HUMAN_EDITORS.some((editor) => editor.test(manager)))) return 'force-apply';
  return action;
}

function ruleMatchesField(
  rule: ConflictRule,
  local: KubeObject,
  remote: KubeObject,
  path: FieldPath,
  managers: readonly string[],
): boolean {
  const byPath = asList(rule.fieldPath).some((expression) =>
    [...matchJsonPath(local, expression), ...matchJsonPath(remote, expression)].some((match) => samePath(match, path)),
  );
  const byRegex = asList(rule.fieldPathRegex).some((pattern) => new RegExp(pattern).test(formatFieldPath(path)));
  const byManager = asList(rule.manager).some((pattern) => managers.some((manager) => new RegExp(pattern).test(manager)));
  return byPath || byRegex || byManager;
}

/** The object's own conflict rules; force-apply rules first so that ignore rules win (Kluctl's order). */
function annotationRules(object: KubeObject): ConflictRule[] {
  const annotations = Object.entries(object.metadata.annotations ?? {});
  const valuesOf = (prefix: string): string[] =>
    annotations.filter(([key]) => new RegExp(`^${prefix.replace(/\./g, '\\.')}(-\\d*)?$`).test(key)).map(([, value]) => value);
  const rules: ConflictRule[] = [];
  if (isTrueAnnotation(object, 'kluctl.io/force-apply')) rules.push({ fieldPath: ['..'], action: 'force-apply' });
  for (const manager of valuesOf('kluctl.io/force-apply-manager')) rules.push({ manager: [manager], action: 'force-apply' });
  for (const field of valuesOf('kluctl.io/force-apply-field')) rules.push({ fieldPath: [field], action: 'force-apply' });
  if (isTrueAnnotation(object, 'kluctl.io/ignore-conflicts')) rules.push({ fieldPath: ['..'], action: 'ignore' });
  for (const manager of valuesOf('kluctl.io/ignore-conflicts-manager')) rules.push({ manager: [manager], action: 'ignore' });
  for (const field of valuesOf('kluctl.io/ignore-conflicts-field')) rules.push({ fieldPath: [field], action: 'ignore' });
  return rules;
}

type Element = { field: string } | { key: Record<string, unknown> } | { value: unknown } | { index: number };

/** Every field path in the live object's managedFields, by its structured-merge-diff string, with its owners. */
function ownedFields(remote: KubeObject): Map<string, { elements: Element[]; managers: string[] }> {
  const fields = new Map<string, { elements: Element[]; managers: string[] }>();
  for (const entry of remote.metadata.managedFields ?? []) {
    walkFieldsV1(entry.fieldsV1, [], (elements) => {
      const key = pathString(elements);
      const known = fields.get(key) ?? { elements, managers: [] };
      if (entry.manager && !known.managers.includes(entry.manager)) known.managers.push(entry.manager);
      fields.set(key, known);
    });
  }
  return fields;
}

function walkFieldsV1(node: unknown, prefix: Element[], visit: (elements: Element[]) => void): void {
  if (!isPlainObject(node)) return;
  for (const [key, child] of Object.entries(node)) {
    if (key === '.') continue;
    const element = parseElement(key);
    if (!element) continue;
    visit([...prefix, element]);
    walkFieldsV1(child, [...prefix, element], visit);
  }
}

function parseElement(key: string): Element | undefined {
  const body = key.slice(2);
  if (key.startsWith('f:')) return { field: body };
  if (key.startsWith('k:')) return { key: JSON.parse(body) as Record<string, unknown> };
  if (key.startsWith('v:')) return { value: JSON.parse(body) as unknown };
  if (key.startsWith('i:')) return { index: Number(body) };
  return undefined;
}

/** structured-merge-diff's Path.String(): `.name`, `[k="v",k2=1]`, `[="value"]`, `[3]`. */
function pathString(elements: readonly Element[]): string {
  return elements
    .map((element) => {
      if ('field' in element) return `.${element.field}`;
      if ('key' in element) {
        const parts = Object.keys(element.key)
          .sort()
          .map((name) => `${name}=${JSON.stringify(element.key[name])}`);
        return `[${parts.join(',')}]`;
      }
      if ('value' in element) return `[=${JSON.stringify(element.value)}]`;
      return `[${element.index}]`;
    })
    .join('');
}

/** Finds the element path in an object, turning list keys and values into indexes. */
function locate(object: unknown, elements: readonly Element[]): FieldPath | undefined {
  const path: FieldPath = [];
  let node = object;
  for (const element of elements) {
    if ('field' in element) {
      if (!isPlainObject(node) || !(element.field in node)) return undefined;
      path.push(element.field);
      node = node[element.field];
      continue;
    }
    if (!Array.isArray(node)) return undefined;
    const index = 'index' in element ? element.index : node.findIndex((item) => listItemMatches(item, element));
    if (index < 0 || index >= node.length) return undefined;
    path.push(index);
    node = node[index];
  }
  return path;
}

function listItemMatches(item: unknown, element: { key: Record<string, unknown> } | { value: unknown }): boolean {
  if ('value' in element) return JSON.stringify(item) === JSON.stringify(element.value);
  return isPlainObject(item) && Object.entries(element.key).every(([name, value]) => JSON.stringify(item[name]) === JSON.stringify(value));
}

function compareForDeletion(a: FieldPath, b: FieldPath): number {
  for (let index = 0; index < Math.min(a.length, b.length); index++) {
    const left = a[index] as string | number;
    const right = b[index] as string | number;
    if (left !== right) return typeof left === 'number' && typeof right === 'number' ? right - left : 0;
  }
  return b.length - a.length;
}
