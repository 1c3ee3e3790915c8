/**
 * The overrides a manual request carries: what the gitops commands' flags change in the KluctlDeployment's spec
 * for this one request, sent as a JSON merge patch (RFC 7386) of the spec in the request's `overridesPatch`, as
 * kluctl's gitops commands build it (cmd/kluctl/commands/cmd_gitops.go buildOverridePatch): flags set fields,
 * list flags (tags, deployment dirs, fixed images) add to the spec's lists, args merge over spec.args.
 */
import type { KluctlDeploymentSpec } from '../api/kluctl-deployment.ts';
import { parseArgs } from '../project/args.ts';
import { readFixedImages } from '../project/fixed-images.ts';

/** The override flags; unset fields leave the spec as it is. */
export interface SpecOverrides {
  target?: string;
  targetNameOverride?: string;
  /** Kluctl's --target-context: spec.context. */
  context?: string;
  /** `name=value` args (dotted names nest, values are YAML, `name=@file` reads a file). */
  args?: readonly string[];
  argsFiles?: readonly string[];
  /** `-F image<:namespace:deployment:container>=result`. */
  fixedImages?: readonly string[];
  fixedImagesFiles?: readonly string[];
  includeTags?: readonly string[];
  excludeTags?: readonly string[];
  includeDeploymentDirs?: readonly string[];
  excludeDeploymentDirs?: readonly string[];
  dryRun?: boolean;
  forceApply?: boolean;
  replaceOnError?: boolean;
  forceReplaceOnError?: boolean;
  abortOnError?: boolean;
  noWait?: boolean;
  prune?: boolean;
}

const FLAG_FIELDS = [
  'dryRun',
  'forceApply',
  'replaceOnError',
  'forceReplaceOnError',
  'abortOnError',
  'noWait',
  'prune',
  'target',
  'targetNameOverride',
  'context',
] as const;
const LIST_FIELDS = ['includeTags', 'excludeTags', 'includeDeploymentDirs', 'excludeDeploymentDirs'] as const;

/**
 * The merge patch of `spec` that applies `overrides`, or undefined when they change nothing (the request then
 * carries no overridesPatch, as kluctl leaves it out for `{}`).
 * @throws Error for a malformed arg or fixed image, or an unreadable args/images file.
 */
export async function buildOverridesPatch(
  spec: KluctlDeploymentSpec,
  overrides: SpecOverrides,
): Promise<Record<string, unknown> | undefined> {
  const patch: Record<string, unknown> = {};
  for (const field of FLAG_FIELDS) {
    if (overrides[field] !== undefined) patch[field] = overrides[field];
  }
  for (const field of LIST_FIELDS) {
    const added = overrides[field] ?? [];
    if (added.length > 0) patch[field] = [...(spec[field] ?? []), ...added];
  }
  const images = await readFixedImages(overrides.fixedImagesFiles ?? [], overrides.fixedImages ?? []);
  if (images.length > 0) patch['images'] = [...(spec.images ?? []), ...images];
  const args = await parseArgs(overrides.args ?? [], overrides.argsFiles ?? []);
  // A merge patch merges objects key by key, as kluctl merges override args over spec.args.
  if (Object.keys(args).length > 0) patch['args'] = args;
  return Object.keys(patch).length > 0 ? patch : undefined;
}
