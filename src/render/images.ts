/**
 * Resolving images, as kluctl's images docs define it: `images.get_image(image)` leaves a placeholder in the rendered
 * object (src/template/image-placeholder.ts), and here each placeholder is replaced by the result image of the last
 * matching fixed image (src/project/fixed-images.ts) — first among those from the command line (`-F`, `--fixed-images-file`) and the target
 * (`images` in .kluctl.yaml; the command line wins), then among those of a global `images` variable. A fixed image
 * matches by `image` (or `imageRegex`) and, when given, the object's namespace, `deployment` (`Kind/name`) and the
 * container (the `name` beside the placeholder). A placeholder nothing matches is an error naming the object.
 */
import { formatRef, refOf, type KubeObject, type ObjectRef } from '../kube/object.ts';
import { validateFixedImages, type FixedImage } from '../project/fixed-images.ts';
import { isPlainObject } from '../values.ts';
import { parseImagePlaceholders } from '../template/image-placeholder.ts';

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
