/**
 * The agent's sources on disk: each service tarball, checked against its sha256 digest and unpacked once into
 * `<dir>/<digest>/`, where it stays across restarts, so a cluster keeps its desired state (and the agent keeps
 * repairing drift) while the server is away.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { extract } from 'tar';

export class SourceCache {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The unpacked source of `digest`, when this agent has it. */
  async find(digest: string): Promise<string | undefined> {
    const dir = path.join(this.dir, digest);
    return (await stat(dir).catch(() => undefined))?.isDirectory() ? dir : undefined;
  }

  /**
   * Checks `tarball` against `digest` and unpacks it.
   * @throws Error when the bytes do not hash to the digest (nothing is kept).
   */
  async add(digest: string, tarball: Buffer): Promise<string> {
    const actual = createHash('sha256').update(tarball).digest('hex');
    if (actual !== digest) throw new Error(`tarball has sha256 ${actual}, not the ${digest} the server declared`);
    await mkdir(this.dir, { recursive: true });
    const temp = await mkdtemp(path.join(this.dir, 'partial-'));
    try {
      const file = path.join(temp, 'source.tar.gz');
      await writeFile(file, tarball);
      const unpacked = path.join(temp, 'source');
      await mkdir(unpacked);
      await extract({ file, cwd: unpacked, strict: true });
      const final = path.join(this.dir, digest);
      await rename(unpacked, final).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      });
      return final;
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }
}
