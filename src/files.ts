/**
 * Kluctl accepts every one of its file names with either `.yml` or `.yaml` (kluctl's yaml.FixPathExt);
 * `.yml` wins when both exist.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
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

/**
 * Writes `body` to `file` while hashing it, for downloads checked against a digest.
 * @returns the SHA-256 of what was written, in hex.
 * @throws the stream's or the file's error.
 */
export async function writeHashed(body: Readable, file: string): Promise<string> {
  const hash = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  await pipeline(body, hashing, createWriteStream(file));
  return hash.digest('hex');
}
