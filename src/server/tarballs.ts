/**
 * Content-addressed source tarballs: a service's folder at a commit, packed reproducibly (sorted entries, no
 * owners, mtime 0, gzip without a timestamp), so the same files always give the same sha256 digest. Agents
 * download by digest and compare (Plural's x-plrl-digest check), so a ref that moved never applies half-way.
 * Tarballs live in `<dir>/<digest>.tar.gz`; one missing on this replica is rebuilt from its pinned commit.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { create, extract } from 'tar';
import { assertLinksInside } from '../files.ts';

/** Files and symlinks below `root` (relative, `/`-separated), sorted. */
async function sortedFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() || entry.isSymbolicLink())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

/**
 * The tarballs of one replica's folder `dir`, by digest (sha256 as 64 lowercase hex digits). Packs of the same or
 * different folders may run concurrently: each packs in its own temporary folder and renames into place, and equal
 * content gives an equal file. It removes no tarball; nothing to close.
 */
export class TarballStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  /**
   * Packs `folder` and returns the tarball's sha256 (hex); an existing tarball of that digest is kept. Symlinks are
   * packed as links, so each must lead to a file or folder inside `folder` (an agent refuses the tarball otherwise).
   * @throws PathEscapeError naming a symlink that leads outside the folder or to nothing; Error when the folder does
   *   not exist or holds no files.
   */
  async pack(folder: string): Promise<string> {
    const files = await sortedFiles(folder);
    await assertLinksInside(folder, 'the folder');
    if (files.length === 0) throw new Error(`${folder} holds no files`);
    await mkdir(this.dir, { recursive: true });
    const temp = await mkdtemp(path.join(this.dir, 'partial-'));
    try {
      const file = path.join(temp, 'source.tar.gz');
      await create({ gzip: { level: 9 }, file, cwd: folder, portable: true, mtime: new Date(0), noDirRecurse: true }, files);
      const digest = await sha256(file);
      await rename(file, this.path(digest));
      return digest;
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  /**
   * The tarball's files (relative path → content as UTF-8), for comparing revisions.
   * @throws Error when this replica does not have it.
   */
  async files(digest: string): Promise<Map<string, string>> {
    const file = await this.find(digest);
    if (!file) throw new Error(`tarball ${digest} is not on this replica`);
    const temp = await mkdtemp(path.join(this.dir, 'read-'));
    try {
      await extract({ file, cwd: temp });
      // A symlink to a folder (inside: pack checked) is no file of its own; its files are listed where they are.
      const names = await sortedFiles(temp);
      const files = await Promise.all(
        names.map(async (name) => {
          const file = path.join(temp, name);
          return (await stat(file)).isDirectory() ? [] : [[name, await readFile(file, 'utf8')] as const];
        }),
      );
      return new Map(files.flat());
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  /** The tarball's path when this replica has it. */
  async find(digest: string): Promise<string | undefined> {
    if (!/^[0-9a-f]{64}$/.test(digest)) return undefined;
    const file = this.path(digest);
    return (await stat(file).catch(() => undefined)) ? file : undefined;
  }

  private path(digest: string): string {
    return path.join(this.dir, `${digest}.tar.gz`);
  }
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
