/**
 * Drift of a service's objects from what its agent applied, as Argo CD's self-heal sees it: an object deleted
 * (MISSING), or a field the manifest sets whose live value is no longer the one the apply left (CHANGED). Only the
 * manifest's own fields count (deploy/projection.ts): what the API server and controllers add beside them (status,
 * defaults, annotations of their own) is no drift, and neither are the fields of the service's diffNormalizers,
 * which are left to the cluster. The baseline is the live object right after the apply, so the API server's own
 * spelling of a value (`500m` for `0.5`) is no drift either.
 *
 * A field another controller took over (it owns it, the agent no longer does) is not repaired: the apply gives it
 * up under Kluctl's conflict rules (deploy/conflicts.ts; only fields of people editing with kubectl are taken back).
 * Such a field is reported as a CONFLICT with its managers for as long as the apply's answer showed it so, and its
 * value is no longer compared.
 */
import type { ComponentDrift } from '../api/services.ts';
import { fieldOwners, fieldsOwnedByOthers } from '../deploy/conflicts.ts';
import { type FieldPath, formatFieldPath } from '../deploy/field-paths.ts';
import { differingFields, projection } from '../deploy/projection.ts';
import type { KubeObject } from '../kube/object.ts';
import { type DiffNormalizer, matchingPointers } from './diff-normalizers.ts';

/** At most this many fields are named in a report (ComponentDriftSchema's maxItems). */
const MAX_FIELDS = 20;

/**
 * What one applied object should look like: its manifest, the live object right after the apply seen through it,
 * and the manifest's fields the apply left to other managers (with them).
 */
export interface Expected {
  manifest: KubeObject;
  baseline: unknown;
  given: { fields: FieldPath[]; managers: string[] };
}

/**
 * The expectation of `manifest` once applied by `fieldManager`, `live` being the API server's answer (or the object
 * the apply skipped).
 */
export function expectationOf(manifest: KubeObject, live: KubeObject, fieldManager: string): Expected {
  return { manifest, baseline: projection(live, manifest), given: fieldsOwnedByOthers(live, manifest, fieldManager) };
}

/**
 * How `live` drifted from `expected`: MISSING when it is gone, CHANGED with the differing fields (in Kluctl's path
 * form, at most 20) and the managers owning them now (`fieldManager`'s own name left out), CONFLICT with the fields
 * the apply gave up when nothing else changed, or undefined. Fields under the pointers of matching `normalizers`
 * and fields given up are not compared.
 */
export function driftOf(
  expected: Expected,
  live: KubeObject | undefined,
  normalizers: readonly DiffNormalizer[],
  fieldManager: string,
): ComponentDrift | undefined {
  if (!live) return { state: 'MISSING', fields: [], managers: [] };
  const ignored = [...matchingPointers(expected.manifest, normalizers).map(pointerPath), ...expected.given.fields];
  const fields = differingFields(expected.baseline, projection(live, expected.manifest)).filter(
    (field) => !ignored.some((prefix) => isUnder(field, prefix)),
  );
  if (fields.length === 0) return given(expected);
  const managers = fieldOwners(live, fields).filter((manager) => manager !== fieldManager);
  return { state: 'CHANGED', fields: fields.slice(0, MAX_FIELDS).map(formatFieldPath), managers: managers.slice(0, MAX_FIELDS) };
}

function given({ given }: Expected): ComponentDrift | undefined {
  if (given.fields.length === 0) return undefined;
  return {
    state: 'CONFLICT',
    fields: given.fields.slice(0, MAX_FIELDS).map(formatFieldPath),
    managers: given.managers.slice(0, MAX_FIELDS),
  };
}

/** RFC 6901 pointer → field path (`/spec/containers/0/image` → spec, containers, 0, image). */
function pointerPath(pointer: string): FieldPath {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isUnder(field: FieldPath, prefix: FieldPath): boolean {
  return prefix.length <= field.length && prefix.every((part, index) => String(part) === String(field[index]));
}
