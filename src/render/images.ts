/**
 * Fixed images, as kluctl's images docs define them: `images.get_image(image)` leaves a placeholder in the rendered
 * object (src/template/image-placeholder.ts), and here each placeholder is replaced by the result image of the last
 * matching fixed image — first among those from the command line (`-F`, `--fixed-images-file`) and the target
 * (`images` in .kluctl.yaml; the command line wins), then among those of a global `images` variable. A fixed image
 * matches by `image` (or `imageRegex`) and, when given, the object's namespace, `deployment` (`Kind/name`) and the
 * container (the `name` beside the placeholder). A placeholder nothing matches is an error naming the object.
 */
import { readFile } from 'node:fs/promises';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { formatRef, refOf, type KubeObject, type ObjectRef } from '../kube/object.ts';
import { isPlainObject } from '../project/values.ts';
import { parseImagePlaceholders } from '../template/image-placeholder.ts';
import { parseYaml } from '../yaml.ts';

export const FixedImageSchema = Type.Object(
  {
    image: Type.Optional(Type.String()),
    imageRegex: Type.Optional(Type.String()),
    resultImage: Type.String(),
    namespace: Type.Optional(Type.String()),
    deployment: Type.Optional(Type.String()),
    container: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type FixedImage = Static<typeof FixedImageSchema>;

/** An image a template asked for, where, and what it resolved to (what `list-images` prints). */
export interface SeenImage {
  image: string;
  resultImage: string;
  object: ObjectRef;
  namespace: string;
  deployment: string;
  container: string;
  /** Where the placeholder was, as object keys and list indexes. */
  fieldPath: Array<string | number>;
  deployTags: string[];
  deploymentDir: string;
}

/**
 * Replaces every image placeholder in `object` (in place) and returns what was resolved.
 * @param fixed fixed images from the command line and the target, in order (later entries win).
 * @param vars the item's vars; a list `images` there is consulted after `fixed`.
 * @throws Error naming the object and image when no fixed image matches.
 */
export function resolveImages(
  object: KubeObject,
  fixed: readonly FixedImage[],
  vars: Record<string, unknown>,
  item: { tags: string[]; dir: string },
): SeenImage[] {
  const ref = refOf(object);
  const deployment = `${object.kind}/${object.metadata.name ?? ''}`;
  const seen: SeenImage[] = [];
  visitStrings(object, [], (text, fieldPath, parent, set) => {
    const placeholders = parseImagePlaceholders(text);
    if (placeholders.length === 0) return;
    const container = typeof parent?.['name'] === 'string' ? parent['name'] : '';
    const resolved = placeholders.map((placeholder) => {
      const wanted = { image: placeholder.image, namespace: ref.namespace, deployment, container };
      const resultImage = lastMatch(fixed, wanted) ?? lastMatch(varsImages(vars), wanted);
      if (resultImage === undefined)
        throw new Error(`${formatRef(ref)}: no fixed image for ${placeholder.image} (pass one with -F ${placeholder.image}=<image>)`);
      seen.push({ ...wanted, resultImage, object: ref, fieldPath, deployTags: item.tags, deploymentDir: item.dir });
      return { ...placeholder, resultImage };
    });
    // Replacing from the end keeps the offsets of earlier placeholders valid.
    set(resolved.reduceRight((result, entry) => result.slice(0, entry.start) + entry.resultImage + result.slice(entry.end), text));
  });
  return seen;
}

/**
 * Parses `-F image<:namespace:deployment:container>=result`, as Kluctl's --fixed-image.
 * @throws Error naming the malformed argument.
 */
export function parseFixedImageArg(arg: string): FixedImage {
  const separator = arg.lastIndexOf('=');
  if (separator <= 0 || separator === arg.length - 1) throw new Error(`invalid --fixed-image '${arg}': expected image=result`);
  const [image, namespace, deployment, container] = arg.slice(0, separator).split(':');
  return {
    image: image as string,
    resultImage: arg.slice(separator + 1),
    ...(namespace ? { namespace } : {}),
    ...(deployment ? { deployment } : {}),
    ...(container ? { container } : {}),
  };
}

/**
 * Checks a list of fixed images (from a file, a target or the `images` var).
 * @throws Error naming `source` and the entry that is not a fixed image.
 */
export function validateFixedImages(value: unknown, source: string): FixedImage[] {
  if (!Array.isArray(value)) throw new Error(`${source}: 'images' must be a list of fixed images`);
  return value.map((entry, index) => {
    if (!Value.Check(FixedImageSchema, entry) || (entry.image === undefined && entry.imageRegex === undefined)) {
      throw new Error(
        `${source}: images[${index}] needs 'image' or 'imageRegex' and 'resultImage' (and only namespace, deployment, container besides)`,
      );
    }
    return entry;
  });
}

/**
 * The fixed images of the command line (or a gitops request): those of each `--fixed-images-file` first (its list
 * `images`), then the `-F image=result` arguments, so later entries win.
 * @throws Error naming the file or argument that is not valid.
 */
export async function readFixedImages(files: readonly string[], args: readonly string[]): Promise<FixedImage[]> {
  const fromFiles: FixedImage[] = [];
  for (const file of files) {
    const document = parseYaml(await readFile(file, 'utf8'), file);
    fromFiles.push(...validateFixedImages(isPlainObject(document) ? document['images'] : undefined, file));
  }
  return [...fromFiles, ...args.map(parseFixedImageArg)];
}

function varsImages(vars: Record<string, unknown>): FixedImage[] {
  const images = vars['images'];
  return Array.isArray(images) ? validateFixedImages(images, "the 'images' variable") : [];
}

function lastMatch(
  list: readonly FixedImage[],
  wanted: { image: string; namespace: string; deployment: string; container: string },
): string | undefined {
  for (let index = list.length - 1; index >= 0; index--) {
    const entry = list[index] as FixedImage;
    if (entry.image !== undefined && entry.image !== wanted.image) continue;
    if (entry.imageRegex !== undefined && !new RegExp(entry.imageRegex).test(wanted.image)) continue;
    if (entry.namespace !== undefined && entry.namespace !== wanted.namespace) continue;
    if (entry.deployment !== undefined && entry.deployment !== wanted.deployment) continue;
    if (entry.container !== undefined && entry.container !== wanted.container) continue;
    return entry.resultImage;
  }
  return undefined;
}

type StringVisitor = (
  text: string,
  path: Array<string | number>,
  parent: Record<string, unknown> | undefined,
  set: (value: string) => void,
) => void;

/** Calls `visit` for every string below `node`, with the map holding it (for a container's `name`). */
function visitStrings(node: unknown, path: Array<string | number>, visit: StringVisitor): void {
  if (Array.isArray(node)) {
    node.forEach((child, index) => {
      if (typeof child === 'string') visit(child, [...path, index], undefined, (value) => (node[index] = value));
      else visitStrings(child, [...path, index], visit);
    });
  } else if (isPlainObject(node)) {
    for (const [key, child] of Object.entries(node)) {
      if (typeof child === 'string') visit(child, [...path, key], node, (value) => (node[key] = value));
      else visitStrings(child, [...path, key], visit);
    }
  }
}
