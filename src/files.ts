/**
 * Kluctl accepts every one of its file names with either `.yml` or `.yaml` (kluctl's yaml.FixPathExt);
 * `.yml` wins when both exist.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';

/** Returns `<dir>/<basename>.yml` or `<dir>/<basename>.yaml`, whichever exists first, else undefined. */
export async function findProjectFile(dir: string, basename: string): Promise<string | undefined> {
  for (const extension of ['.yml', '.yaml']) {
    const candidate = path.join(dir, basename + extension);
    if (await isFile(candidate)) return candidate;
  }
  return undefined;
}

export async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() ?? false;
}

export async function isDirectory(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => undefined))?.isDirectory() ?? false;
}

/** `child` relative to `root` with forward slashes; '.' for the root itself. */
export function relativeSlashPath(root: string, child: string): string {
  return path.relative(root, child).split(path.sep).join('/') || '.';
}

/** True when `child` is `root` or inside it. */
export function isInside(root: string, child: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}
