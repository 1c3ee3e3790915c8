/**
 * Selecting part of a project with `-I/--include-tag`, `-E/--exclude-tag`, `--include-deployment-dir` and
 * `--exclude-deployment-dir`, as kluctl's Inclusion defines it: with no selection everything is included; an
 * exclusion always wins; with inclusions, only what matches one is included. Items are matched by their tags and
 * folder; objects in the cluster by their `kluctl.io/tag-<i>` labels and `kluctl.io/deployment-item-dir`
 * annotation, so prune and delete stay within the same selection.
 */
import type { KubeObject } from '../kube/object.ts';

export interface Inclusion {
  includeTags: string[];
  excludeTags: string[];
  includeDirs: string[];
  excludeDirs: string[];
}

export const NO_SELECTION: Inclusion = { includeTags: [], excludeTags: [], includeDirs: [], excludeDirs: [] };

/** What an item or object is matched by. */
export interface InclusionKeys {
  tags: readonly string[];
  dir: string | undefined;
}

/** True when any of the four lists is non-empty: the command selects part of the project (else all is included). */
export function isSelecting(inclusion: Inclusion): boolean {
  return [inclusion.includeTags, inclusion.excludeTags, inclusion.includeDirs, inclusion.excludeDirs].some((list) => list.length > 0);
}

/** True when tags are part of the selection (then `kluctl.io/skip-delete-if-tags` objects are not deleted). */
export function selectsByTags(inclusion: Inclusion): boolean {
  return inclusion.includeTags.length > 0 || inclusion.excludeTags.length > 0;
}

/** kluctl's CheckIncluded (without excludeIfNotIncluded). */
export function isIncluded(keys: InclusionKeys, inclusion: Inclusion): boolean {
  if (!isSelecting(inclusion)) return true;
  const matches = (tags: readonly string[], dirs: readonly string[]): boolean =>
    keys.tags.some((tag) => tags.includes(tag)) || (keys.dir !== undefined && dirs.includes(keys.dir));
  if (matches(inclusion.excludeTags, inclusion.excludeDirs)) return false;
  const hasIncludes = inclusion.includeTags.length > 0 || inclusion.includeDirs.length > 0;
  return !hasIncludes || matches(inclusion.includeTags, inclusion.includeDirs);
}

/** The keys of an object in the cluster: its tag labels and its deployment-item-dir annotation. */
export function objectKeys(object: KubeObject): InclusionKeys {
  const tags = Object.entries(object.metadata.labels ?? {})
    .filter(([key]) => /^kluctl\.io\/tag-\d+$/.test(key))
    .map(([, value]) => value);
  return { tags, dir: object.metadata.annotations?.['kluctl.io/deployment-item-dir'] };
}
