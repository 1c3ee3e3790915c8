/**
 * A rendered target as data: everything deploy, diff, prune, delete and validate need, and nothing of the machine
 * that rendered it (no paths, no vars, no kubeconfig). So it can be hashed, stored, sent and applied to another
 * cluster ("render here, apply there"), or diffed against many ("render once, preview everywhere"). JSON, versioned
 * by `apiVersion`:
 *
 * ```
 * { apiVersion: gantry.dev/v1alpha1, kind: RenderedTarget,
 *   target: {name, discriminator, context?},           the target as rendered (context: the one it named)
 *   inclusion: {includeTags, excludeTags, includeDirs, excludeDirs},   prune and delete keep to it
 *   cluster: {kubeVersion, apiVersions[], offline},     what the render read from its cluster (offline: assumed)
 *   items: [{dir?, barrier, message?, waitReadiness, deleteObjects[], waitReadinessObjects[],
 *            conflictResolution[], ignoreForDiff[], objects[]}],   in deployment order; hooks are objects
 *   images: [SeenImage],                               what images.get_image resolved
 *   objectsHash,                                       Kluctl's hash of all objects (src/render/objects-hash.ts)
 *   sensitiveValues: [string] }                        masked in every result of this target
 * ```
 *
 * Like the objects it holds (Secrets among them), a rendered target carries the values of sensitive vars in clear:
 * store and send it as a Secret, never log it.
 */
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { KubeObject, ObjectRef } from '../kube/object.ts';
import type { Inclusion } from '../project/inclusion.ts';
import { ConflictResolutionSchema, IgnoreForDiffSchema, ObjectSelectorSchema } from '../project/schema.ts';
import type { SeenImage } from '../render/images.ts';
import { hashOf } from '../values.ts';

export const RENDERED_TARGET_API_VERSION = 'gantry.dev/v1alpha1';

const Open = { additionalProperties: true };
const Closed = { additionalProperties: false };

const KubeObjectSchema = Type.Unsafe<KubeObject>(
  Type.Object(
    {
      apiVersion: Type.String({ minLength: 1 }),
      kind: Type.String({ minLength: 1 }),
      metadata: Type.Object({ name: Type.String({ minLength: 1 }), namespace: Type.Optional(Type.String()) }, Open),
    },
    Open,
  ),
);

const ObjectRefSchema = Type.Unsafe<ObjectRef>(
  Type.Object({ group: Type.String(), version: Type.String(), kind: Type.String(), namespace: Type.String(), name: Type.String() }, Closed),
);

const SeenImageSchema = Type.Unsafe<SeenImage>(
  Type.Object(
    {
      image: Type.String(),
      resultImage: Type.String(),
      object: ObjectRefSchema,
      namespace: Type.String(),
      deployment: Type.String(),
      container: Type.String(),
      fieldPath: Type.Array(Type.Union([Type.String(), Type.Number()])),
      deployTags: Type.Array(Type.String()),
      deploymentDir: Type.String(),
    },
    Closed,
  ),
);

const InclusionSchema = Type.Unsafe<Inclusion>(
  Type.Object(
    {
      includeTags: Type.Array(Type.String()),
      excludeTags: Type.Array(Type.String()),
      includeDirs: Type.Array(Type.String()),
      excludeDirs: Type.Array(Type.String()),
    },
    Closed,
  ),
);

export const TargetItemSchema = Type.Object(
  {
    /** The item's folder relative to its source (Kluctl's kluctl.io/deployment-item-dir); none for barriers and selectors. */
    dir: Type.Optional(Type.String()),
    barrier: Type.Boolean(),
    message: Type.Optional(Type.String()),
    waitReadiness: Type.Boolean(),
    deleteObjects: Type.Array(ObjectSelectorSchema),
    waitReadinessObjects: Type.Array(ObjectSelectorSchema),
    conflictResolution: Type.Array(ConflictResolutionSchema),
    ignoreForDiff: Type.Array(IgnoreForDiffSchema),
    objects: Type.Array(KubeObjectSchema),
  },
  Closed,
);

/** One deployment item as applying it needs it. */
export type TargetItem = Static<typeof TargetItemSchema>;

export const RenderedTargetSchema = Type.Object(
  {
    apiVersion: Type.Literal(RENDERED_TARGET_API_VERSION),
    kind: Type.Literal('RenderedTarget'),
    target: Type.Object({ name: Type.String(), discriminator: Type.String(), context: Type.Optional(Type.String()) }, Closed),
    inclusion: InclusionSchema,
    cluster: Type.Object({ kubeVersion: Type.String(), apiVersions: Type.Array(Type.String()), offline: Type.Boolean() }, Closed),
    items: Type.Array(TargetItemSchema),
    images: Type.Array(SeenImageSchema),
    objectsHash: Type.String(),
    sensitiveValues: Type.Array(Type.String()),
  },
  Closed,
);

export type RenderedTarget = Static<typeof RenderedTargetSchema>;

/** Every object of every item, in deployment order. */
export function targetObjects(target: RenderedTarget): KubeObject[] {
  return target.items.flatMap((item) => item.objects);
}

/** The sha256 of the target's canonical JSON: equal for equal targets, whoever rendered them. */
export function renderedTargetDigest(target: RenderedTarget): string {
  return hashOf(target);
}

/**
 * Reads a rendered target from JSON.
 * @throws Error naming `source` and, for a document that is not a rendered target, each wrong field by its path.
 */
export function parseRenderedTarget(text: string, source: string): RenderedTarget {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source}: not JSON: ${(error as Error).message}`);
  }
  const errors = [...Value.Errors(RenderedTargetSchema, value)].map((error) => `${error.instancePath || '/'}: ${error.message}`);
  if (errors.length > 0)
    throw new Error(`${source}: not a ${RENDERED_TARGET_API_VERSION} RenderedTarget: ${errors.slice(0, 5).join('; ')}`);
  return value as RenderedTarget;
}
