/**
 * Deleting objects a target owns, for prune and delete: everything else first, Namespaces last (their deletion
 * takes everything inside with it, so deleting them first would hide what was removed), then waiting until the
 * objects are really gone, as `kubectl delete` waits.
 */
import pLimit from 'p-limit';
import type { Cluster } from '../kube/cluster.ts';
import { sleep } from '../sleep.ts';
import { formatRef, refKey, type ObjectRef } from '../kube/object.ts';
import type { Progress } from '../progress.ts';
import type { ResultCollector } from './result.ts';
import { messageOf } from '../problems.ts';

export interface DeletionOptions {
  dryRun: boolean;
  /** How long to wait for the objects to disappear, in milliseconds. */
  timeoutMs: number;
  /** False: delete without waiting for the objects to disappear. Default true. */
  wait?: boolean;
  progress: Progress;
  /** Stops deleting and waiting, throwing the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Deletes `refs` and records each in `result` (deleted, or an error naming the object). */
export async function deleteObjects(
  cluster: Cluster,
  refs: readonly ObjectRef[],
  result: ResultCollector,
  options: DeletionOptions,
): Promise<void> {
  const namespaces = refs.filter((ref) => ref.kind === 'Namespace' && ref.group === '');
  const others = refs.filter((ref) => !namespaces.includes(ref));
  for (const batch of [others, namespaces]) {
    const deleted = await deleteBatch(cluster, batch, result, options);
    if (!options.dryRun && options.wait !== false) await waitUntilGone(cluster, deleted, result, options);
  }
}

async function deleteBatch(
  cluster: Cluster,
  refs: readonly ObjectRef[],
  result: ResultCollector,
  options: DeletionOptions,
): Promise<ObjectRef[]> {
  const limit = pLimit(16);
  const deleted: ObjectRef[] = [];
  await Promise.all(
    refs.map((ref) =>
      limit(async () => {
        try {
          options.signal?.throwIfAborted();
          options.progress.step('delete', `deleting ${formatRef(ref)}`);
          if (await cluster.delete(ref)) deleted.push(ref);
          result.addDeleted(ref);
        } catch (error) {
          options.signal?.throwIfAborted();
          result.error(`deleting failed: ${messageOf(error)}`, ref);
        }
      }),
    ),
  );
  return deleted;
}

async function waitUntilGone(
  cluster: Cluster,
  refs: readonly ObjectRef[],
  result: ResultCollector,
  options: DeletionOptions,
): Promise<void> {
  const remaining = await untilGone(cluster, refs, {
    timeoutMs: options.timeoutMs,
    onWait: (count) => options.progress.step('delete', `waiting for ${count} object(s) to disappear`),
    signal: options.signal,
  });
  for (const ref of new Map(remaining.map((entry) => [refKey(entry), entry])).values()) {
    result.warn('still being deleted when the timeout passed', ref);
  }
}

/**
 * Polls until none of `refs` exists any more, or `timeoutMs` passed.
 * @returns the refs still present at the end.
 * @throws the signal's reason when it fires.
 */
export async function untilGone(
  cluster: Cluster,
  refs: readonly ObjectRef[],
  options: { timeoutMs: number; onWait?: (count: number) => void; signal?: AbortSignal | undefined },
): Promise<ObjectRef[]> {
  const deadline = Date.now() + options.timeoutMs;
  let remaining = [...refs];
  while (remaining.length > 0) {
    const present = await Promise.all(remaining.map(async (ref) => (await cluster.get(ref)) !== undefined));
    remaining = remaining.filter((_, index) => present[index]);
    if (remaining.length === 0 || Date.now() >= deadline) break;
    options.onWait?.(remaining.length);
    await sleep(500, options.signal);
  }
  return remaining;
}
