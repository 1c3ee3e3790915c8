/**
 * Fixed images, as kluctl's images docs define them: `image` (or `imageRegex`) and `resultImage`, optionally only for
 * a namespace, a `deployment` (`Kind/name`) and a container. They come from a target's `images` in .kluctl.yaml,
 * `-F`/`--fixed-images-file` on the command line, and a KluctlDeployment's spec.images; src/render/images.ts
 * resolves `images.get_image` with them.
 */
import { readFile } from 'node:fs/promises';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { isPlainObject } from '../values.ts';
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
