/**
 * Object diffs as Kluctl shows them: both sides normalized (server bookkeeping removed: managedFields, the
 * last-applied annotation, creationTimestamp, generation, resourceVersion, uid, status; then the fields the
 * project's `ignoreForDiff` rules and the object's `kluctl.io/ignore-diff*` annotations name), written as YAML
 * with sorted keys, then compared as a unified diff. An empty diff means no change.
 */
import { isDeepStrictEqual } from 'node:util';
import { createTwoFilesPatch } from 'diff';
import { toYaml } from '../yaml.ts';
import { formatRef, isSecret, refOf, type KubeObject } from '../kube/object.ts';
import type { IgnoreForDiffConfig } from '../project/schema.ts';
import { isPlainObject } from '../values.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';
import { MASK, type SensitiveValues } from '../project/sensitive.ts';
import { allFieldPaths, asList, deleteField, formatFieldPath, matchesObject, matchJsonPath, type FieldPath } from './field-paths.ts';

const DROPPED_METADATA = ['managedFields', 'creationTimestamp', 'generation', 'resourceVersion', 'uid', 'selfLink'];
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

export interface DiffRules {
  ignoreForDiff: readonly IgnoreForDiffConfig[];
  /** The values of sensitive vars: fields holding one are masked on both sides (see maskSensitiveFields). */
  sensitive?: SensitiveValues | undefined;
}

/** A copy of `object` without server bookkeeping, keys sorted at every level. */
export function normalizeObject(object: KubeObject): KubeObject {
  const copy = structuredClone(object) as KubeObject;
  delete copy['status'];
  for (const field of DROPPED_METADATA) delete copy.metadata[field];
  if (copy.metadata.annotations) {
    delete copy.metadata.annotations[LAST_APPLIED];
    if (Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations;
  }
  return sortKeys(copy) as KubeObject;
}

/**
 * The diff a result reports for an object, from the cluster's `before` to `after`: '' when they are equal once
 * ignored fields are removed, or when the rendered object is annotated `kluctl.io/ignore-diff`.
 */
export function diffForResult(before: KubeObject, after: KubeObject, rules: DiffRules): string {
  if (isTrueAnnotation(after, 'kluctl.io/ignore-diff')) return '';
  const rulesForObject = [...rules.ignoreForDiff.filter((rule) => matchesObject(rule, after)), ...annotationRules(after)];
  const [oldObject, newObject] = rules.sensitive ? maskSensitiveFields(before, after, rules.sensitive) : [before, after];
  return diffObjects(withoutIgnored(oldObject, rulesForObject), withoutIgnored(newObject, rulesForObject));
}

/**
 * Copies of `before` and `after` in which every string field whose new value holds a sensitive value is masked: the
 * new value with the values masked, the old one — unknown to the render, perhaps an earlier secret — whole,
 * unless it equals the new one. So a diff tells that such a field changed, never what it held.
 */
export function maskSensitiveFields(before: KubeObject, after: KubeObject, sensitive: SensitiveValues): [KubeObject, KubeObject] {
  const oldCopy = structuredClone(before);
  const newCopy = structuredClone(after);
  const visit = (newNode: unknown, oldNode: unknown): void => {
    if (!isPlainObject(newNode) && !Array.isArray(newNode)) return;
    for (const key of Object.keys(newNode)) {
      const value = (newNode as Record<string, unknown>)[key];
      const old = isPlainObject(oldNode) || Array.isArray(oldNode) ? (oldNode as Record<string, unknown>)[key] : undefined;
      if (typeof value !== 'string') {
        visit(value, old);
        continue;
      }
      const masked = sensitive.mask(value);
      if (masked === value) continue;
      (newNode as Record<string, unknown>)[key] = masked;
      if (typeof old === 'string') (oldNode as Record<string, unknown>)[key] = old === value ? masked : MASK;
    }
  };
  visit(newCopy, oldCopy);
  return [oldCopy, newCopy];
}

/**
 * Unified diff from `before` to `after` (both normalized first); '' when they are equal. A Secret's values are
 * never shown (as Kluctl's obfuscator): the diff says which keys changed, not to what.
 */
export function diffObjects(before: KubeObject, after: KubeObject): string {
  const [oldObject, newObject] = isSecret(after) ? obfuscateSecretPair(before, after) : [before, after];
  const oldNormal = normalizeObject(oldObject);
  const newNormal = normalizeObject(newObject);
  // Most objects of a deploy are unchanged: equal values make equal YAML, which costs far more to write than to compare.
  if (isDeepStrictEqual(oldNormal, newNormal)) return '';
  const oldText = toYaml(oldNormal);
  const newText = toYaml(newNormal);
  if (oldText === newText) return '';
  const name = formatRef(refOf(after));
  return createTwoFilesPatch(name, name, oldText, newText, 'cluster', 'rendered', { context: 3 }).split('\n').slice(2).join('\n').trimEnd();
}

/** `kluctl.io/ignore-diff-field(-N)` and `kluctl.io/ignore-diff-field-regex(-N)` as rules. */
function annotationRules(object: KubeObject): IgnoreForDiffConfig[] {
  const entries = Object.entries(object.metadata.annotations ?? {});
  return [
    { fieldPath: entries.filter(([key]) => /^kluctl\.io\/ignore-diff-field(-\d*)?$/.test(key)).map(([, value]) => value) },
    { fieldPathRegex: entries.filter(([key]) => /^kluctl\.io\/ignore-diff-field-regex(-\d*)?$/.test(key)).map(([, value]) => value) },
  ];
}

function withoutIgnored(object: KubeObject, rules: readonly IgnoreForDiffConfig[]): KubeObject {
  const copy = structuredClone(object) as KubeObject;
  const paths: FieldPath[] = [];
  for (const rule of rules) {
    for (const expression of asList(rule.fieldPath)) paths.push(...matchJsonPath(copy, expression));
    const patterns = asList(rule.fieldPathRegex).map((pattern) => new RegExp(`^${pattern}$`));
    if (patterns.length > 0)
      paths.push(...allFieldPaths(copy).filter((path) => patterns.some((pattern) => pattern.test(formatFieldPath(path)))));
  }
  // Deepest first, and later list items before earlier ones, so removing one never moves another.
  for (const path of paths.sort(
    (a, b) => b.length - a.length || String(b[b.length - 1]).localeCompare(String(a[a.length - 1]), undefined, { numeric: true }),
  )) {
    deleteField(copy, path);
  }
  return copy;
}

/** Secret values replaced by markers that differ only where the values differ. */
function obfuscateSecretPair(before: KubeObject, after: KubeObject): [KubeObject, KubeObject] {
  const oldCopy = structuredClone(before);
  const newCopy = structuredClone(after);
  for (const field of ['data', 'stringData']) {
    const oldValues = isPlainObject(oldCopy[field]) ? oldCopy[field] : {};
    const newValues = isPlainObject(newCopy[field]) ? newCopy[field] : {};
    for (const key of Object.keys(oldValues)) {
      oldValues[key] = key in newValues && newValues[key] !== oldValues[key] ? '***** (obfuscated, old value)' : '***** (obfuscated)';
    }
    for (const key of Object.keys(newValues)) {
      newValues[key] = oldValues[key] === '***** (obfuscated, old value)' ? '***** (obfuscated, new value)' : '***** (obfuscated)';
    }
  }
  return [oldCopy, newCopy];
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}
