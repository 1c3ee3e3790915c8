/**
 * Kluctl accepts every one of its file names with either `.yml` or `.yaml` (kluctl's yaml.FixPathExt);
 * `.yml` wins when both exist.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { lstat, readdir, readlink, realpath, stat } from 'node:fs/promises';
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

/** True when `child` is `root` or inside it, comparing the text of both paths (see resolveInside for files on disk). */
export function isInside(root: string, child: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** A path that a project, a repository or a tarball names leaves its root, by its text or through a symlink. */
export class PathEscapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathEscapeError';
  }
}

/**
 * The one resolver for every file that untrusted content (a project, a service's source, a tarball) names: `name`,
 * relative to `base` (default `root`) or absolute, resolved with every symlink followed, which must stay inside
 * `root` (itself resolved). Symlinks that stay inside keep working. A path that does not exist resolves as far as it
 * exists, so the caller still reports it missing in its own words.
 * @param label names the file in the error, e.g. `deployment.yml: vars[0].file`; `root` names the root there, e.g.
 *   `the repository` (default: the root folder's name).
 * @returns the resolved absolute path.
 * @throws PathEscapeError naming the file, and the symlink with where it points when one leads out (or the NUL
 *   character no path may hold).
 */
export async function resolveInside(
  root: string,
  name: string,
  options: { base?: string; label?: string; root?: string } = {},
): Promise<string> {
  const label = options.label ? `${options.label}: ` : '';
  const rootName = options.root ?? (path.basename(root) || root);
  // The file system would refuse it with a TypeError that names no file.
  if (name.includes('\0')) throw new PathEscapeError(`${label}${JSON.stringify(name)} holds a NUL character, which no path may`);
  const lexical = path.resolve(options.base ?? root, name);
  if (!isInside(path.resolve(root), lexical)) throw new PathEscapeError(`${label}'${name}' is outside ${rootName}`);
  const realRoot = await realpath(root);
  const resolved = await realpathAsFarAsExists(lexical);
  if (isInside(realRoot, resolved)) return resolved;
  const link = await firstLinkLeaving(path.resolve(root), realRoot, lexical);
  const how = link ? ` through the symlink '${relativeSlashPath(path.resolve(root), link.path)}' -> '${link.target}'` : '';
  throw new PathEscapeError(`${label}'${name}' leads outside ${rootName}${how}`);
}

/**
 * Checks every symlink below `root` (content about to be packed, or just unpacked, whose links stay links; a local
 * Helm chart, whose links helm follows): each must lead, with every link on its way followed as the operating system
 * follows it, to an existing file or folder inside `within` (default: `root` itself). Links that stay inside keep
 * working.
 * @param rootName names `within` in the error, as resolveInside's `root` option does.
 * @throws PathEscapeError naming the first such link (in path order) and its target, when it leads outside `within`,
 *   to nothing, or round in a loop.
 */
export async function assertLinksInside(root: string, rootName = path.basename(root), within = root): Promise<void> {
  const realRoot = await realpath(within);
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const links = entries.filter((entry) => entry.isSymbolicLink()).map((entry) => path.join(entry.parentPath, entry.name));
  for (const link of links.sort()) {
    const resolved = await realpath(link).catch(() => undefined);
    if (resolved !== undefined && isInside(realRoot, resolved)) continue;
    const where = resolved === undefined ? `to nothing inside ${rootName}` : `outside ${rootName}`;
    throw new PathEscapeError(`the symlink '${relativeSlashPath(root, link)}' -> '${await readlink(link)}' leads ${where}`);
  }
}

/** realpath of the longest existing prefix of `file`, joined with the rest (which holds no symlink, not existing). */
async function realpathAsFarAsExists(file: string): Promise<string> {
  const rest: string[] = [];
  for (let current = file; ; current = path.dirname(current)) {
    try {
      return path.join(await realpath(current), ...rest);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || current === path.dirname(current)) throw error;
      rest.unshift(path.basename(current));
    }
  }
}

/** The first symlink on the way from `root` to `file` whose real path is outside `realRoot`. */
async function firstLinkLeaving(root: string, realRoot: string, file: string): Promise<{ path: string; target: string } | undefined> {
  let current = root;
  for (const part of path.relative(root, file).split(path.sep)) {
    current = path.join(current, part);
    const stats = await lstat(current).catch(() => undefined);
    if (!stats) return undefined;
    if (stats.isSymbolicLink() && !isInside(realRoot, await realpathAsFarAsExists(current))) {
      return { path: current, target: await readlink(current) };
    }
  }
  return undefined;
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
