/**
 * `poke-images`, as Kluctl's command of that name: render the target, then change only the container images that
 * `images.get_image` resolved, in the objects already deployed, and nothing else. Each object gets one JSON patch
 * of exactly those fields, so no other field (nor its ownership) is touched.
 */
import pLimit from 'p-limit';
import { refKey, type ObjectRef } from '../kube/object.ts';
import type { SeenImage } from '../render/images.ts';
import type { Cluster } from '../kube/cluster.ts';
import { SensitiveValues } from '../project/sensitive.ts';
import type { CommandContext } from './deploy.ts';
import { diffObjects } from './diff.ts';
import type { RenderedTarget } from '../target/rendered-target.ts';
import { lockedUnlessDryRun } from './target-lock.ts';
import { maskResult, ResultCollector, type CommandResult } from './result.ts';
import { messageOf } from '../problems.ts';

/**
 * Pokes the images, holding the target's lock unless it is a dry run.
 * @throws the signal's reason when it fired; TargetLockedError when another holder keeps the target's lock; failures
 *   of single objects are in the result.
 */
export function pokeImages(
  target: RenderedTarget,
  cluster: Cluster,
  options: CommandContext & { dryRun: boolean },
): Promise<CommandResult> {
  return lockedUnlessDryRun('poke-images', target.target.discriminator, cluster, options, (locked, view) =>
    patchImages(target, view, locked),
  );
}

async function patchImages(
  target: RenderedTarget,
  unbound: Cluster,
  options: CommandContext & { dryRun: boolean },
): Promise<CommandResult> {
  const cluster = unbound.withSignal(options.signal);
  const { progress } = options;
  const result = new ResultCollector();
  const byObject = new Map<string, { ref: ObjectRef; images: SeenImage[] }>();
  for (const image of target.images) {
    const entry = byObject.get(refKey(image.object)) ?? { ref: image.object, images: [] };
    entry.images.push(image);
    byObject.set(refKey(image.object), entry);
  }
  const limit = pLimit(8);
  await Promise.all(
    [...byObject.values()].map(({ ref, images }) =>
      limit(async () => {
        const live = await cluster.get(ref);
        if (!live) {
          result.warn('not deployed, so no image to poke', ref);
          return;
        }
        progress.step('poke-images', `setting ${images.length} image(s)`);
        try {
          const operations = images.map((image) => ({
            op: 'replace' as const,
            path: jsonPointer(image.fieldPath),
            value: image.resultImage,
          }));
          const patched = await cluster.patchJson(ref, operations, { fieldManager: options.fieldManager });
          const diff = diffObjects(live, patched);
          if (diff) result.addChanged(ref, diff);
        } catch (error) {
          options.signal?.throwIfAborted();
          result.error(`poking images failed: ${messageOf(error)}`, ref);
        }
      }),
    ),
  );
  return maskResult(result.finish(), new SensitiveValues(target.sensitiveValues));
}

/** RFC 6901 pointer of a field path. */
function jsonPointer(path: ReadonlyArray<string | number>): string {
  return path.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
