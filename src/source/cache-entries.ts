/**
 * Lifetimes of cache entries (git mirrors and snapshots, Flux artifacts): each use of an entry sets its folder's
 * mtime, and a sweep removes entries nobody used for longer than a maximum age, so a long-running controller's
 * cache holds what its deployments use rather than every commit it ever saw. Half-written entries left by a crash
 * (`*.partial-*`) age out the same way.
 */
import { readdir, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';

/** Marks `dir` as used now. Never throws: a missing entry simply has nothing to mark. */
export async function markUsed(dir: string): Promise<void> {
  const now = new Date();
  await utimes(dir, now, now).catch(() => undefined);
}

/**
 * Removes the entries of `parent` (its direct children) last used more than `maxAgeMs` ago, each through `remove`
 * (default: recursive rm), for a cache that must lock an entry first.
 * @returns the paths removed. A missing `parent` has none.
 */
export async function removeUnused(
  parent: string,
  maxAgeMs: number,
  remove: (entry: string) => Promise<void> = removeTree,
): Promise<string[]> {
  const cutoff = Date.now() - maxAgeMs;
  const removed: string[] = [];
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const entry = path.join(parent, name);
    const info = await stat(entry).catch(() => undefined);
    if (!info || info.mtimeMs >= cutoff) continue;
    await remove(entry);
    removed.push(entry);
  }
  return removed;
}

function removeTree(entry: string): Promise<void> {
  return rm(entry, { recursive: true, force: true });
}
