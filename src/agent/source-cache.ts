/**
 * The agent's sources on disk: each service tarball, checked against its sha256 digest and unpacked once into
 * `<dir>/<digest>/`, where it stays across restarts, so a cluster keeps its desired state (and the agent keeps
 * repairing drift) while the server is away.
 *
 * A tarball is untrusted input (a repository's content, packed by the server): node-tar unpacks it strictly, and
 * the cache refuses, keeping nothing, an entry with an absolute path or a `..` component, an entry that is neither
 * a file, a folder nor a link, a link whose target leaves the source (absolute, climbing out, or through another
 * link), and a tarball over any of TarballLimits. Links that stay inside keep working.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Stats } from 'node:fs';
import { extract, type Parser, ReadEntry } from 'tar';
import { assertLinksInside } from '../files.ts';

/** Caps on one tarball; each is refused beyond. */
export interface TarballLimits {
  /** Bytes of the tarball as downloaded (gzip-compressed). */
  maxTarballBytes: number;
  /** Bytes it unpacks to (the tar stream: headers and contents), against gzip expansion bombs. */
  maxUnpackedBytes: number;
  /** Entries (files, folders and links). */
  maxEntries: number;
}

/** 64 MiB, compressed: a service's folder or a Helm chart with its wrapper is a few MiB at most. */
export const MAX_TARBALL_BYTES = 64 * 1024 * 1024;
/** 256 MiB, unpacked. */
export const MAX_UNPACKED_BYTES = 256 * 1024 * 1024;
/** 20,000 entries. */
export const MAX_TARBALL_ENTRIES = 20_000;

export const DEFAULT_TARBALL_LIMITS: TarballLimits = {
  maxTarballBytes: MAX_TARBALL_BYTES,
  maxUnpackedBytes: MAX_UNPACKED_BYTES,
  maxEntries: MAX_TARBALL_ENTRIES,
};

/** Entry types a source may hold; devices, FIFOs and the like are refused. */
const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

/** A tarball the cache refuses: the entry and why, or the cap it goes over. */
export class TarballError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TarballError';
  }
}

/**
 * The agent's unpacked sources under `dir`, by digest (the tarball's sha256 as 64 hex digits, no `sha256:` prefix):
 * find() before downloading, add() after. Concurrent adds, even of one digest, are safe: each unpacks into its own
 * temporary folder and the first rename wins. It removes no source; nothing to close.
 */
export class SourceCache {
  readonly dir: string;
  readonly limits: TarballLimits;

  constructor(dir: string, limits: Partial<TarballLimits> = {}) {
    this.dir = dir;
    this.limits = { ...DEFAULT_TARBALL_LIMITS, ...limits };
  }

  /** The unpacked source of `digest`, when this agent has it. */
  async find(digest: string): Promise<string | undefined> {
    const dir = path.join(this.dir, digest);
    return (await stat(dir).catch(() => undefined))?.isDirectory() ? dir : undefined;
  }

  /**
   * Checks `tarball` against `digest` and unpacks it.
   * @throws Error when the bytes do not hash to the digest; TarballError naming the entry (or the cap) the cache
   *   refuses, PathEscapeError naming a link that leads outside the source through another one; any other error of
   *   node-tar's strict unpacking. Nothing is kept then.
   */
  async add(digest: string, tarball: Buffer): Promise<string> {
    const { maxTarballBytes, maxUnpackedBytes } = this.limits;
    if (tarball.length > maxTarballBytes) {
      throw new TarballError(`tarball is ${tarball.length} bytes, more than the ${maxTarballBytes} an agent accepts`);
    }
    const actual = createHash('sha256').update(tarball).digest('hex');
    if (actual !== digest) throw new Error(`tarball has sha256 ${actual}, not the ${digest} the server declared`);
    await mkdir(this.dir, { recursive: true });
    const temp = await mkdtemp(path.join(this.dir, 'partial-'));
    try {
      const file = path.join(temp, 'source.tar.gz');
      await writeFile(file, tarball);
      const unpacked = path.join(temp, 'source');
      await mkdir(unpacked);
      const refuse = entryCheck(this.limits);
      await extract({
        file,
        cwd: unpacked,
        strict: true,
        // Read in one chunk, so the ratio below bounds the unpacked bytes from the first one on.
        maxReadSize: Math.max(tarball.length, 1),
        maxDecompressionRatio: maxUnpackedBytes / Math.max(tarball.length, 1),
        filter(this: Parser, _path: string, entry: ReadEntry | Stats) {
          if (!(entry instanceof ReadEntry)) return true; // only when packing
          const reason = refuse(entry);
          if (reason) this.abort(new TarballError(`tarball entry '${entry.path}': ${reason}`));
          return !reason;
        },
      }).catch((error: unknown) => {
        if (error instanceof Error && /max decompression ratio exceeded/.test(error.message)) {
          throw new TarballError(`tarball unpacks to more than the ${maxUnpackedBytes} bytes an agent accepts`);
        }
        throw error;
      });
      await assertLinksInside(unpacked, 'the source');
      const final = path.join(this.dir, digest);
      await rename(unpacked, final).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      });
      return final;
    } finally {
      // A refused entry rejects the unpack while it may still be writing an earlier file into `temp`: removing
      // is tried again until that write is done (Node retries ENOTEMPTY), so nothing of a refused tarball stays.
      await rm(temp, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
    }
  }
}

/**
 * The check of each entry of one tarball, in order (it counts them).
 * @returns why the entry is refused, or undefined. A link's target is judged by its text here (node-tar refuses
 *   a link through a link already unpacked; assertLinksInside judges the rest on disk).
 */
function entryCheck(limits: TarballLimits): (entry: ReadEntry) => string | undefined {
  let entries = 0;
  return (entry) => {
    if (++entries > limits.maxEntries) return `the tarball holds more than the ${limits.maxEntries} entries an agent accepts`;
    if (path.posix.isAbsolute(entry.path)) return 'an absolute path';
    if (entry.path.split('/').includes('..')) return "a path with a '..' component";
    if (!ALLOWED_TYPES.has(entry.type)) return `a ${entry.type} entry; only files, folders and links are accepted`;
    if (entry.type !== 'SymbolicLink' && entry.type !== 'Link') return undefined;
    const target = entry.linkpath ?? '';
    if (path.posix.isAbsolute(target)) return `a link to the absolute path '${target}'`;
    // A symlink's target is relative to its folder, a hard link's to the tarball's root.
    const from = entry.type === 'SymbolicLink' ? path.posix.dirname(entry.path) : '.';
    const resolved = path.posix.normalize(path.posix.join(from, target));
    if (resolved === '..' || resolved.startsWith('../')) return `a link to '${target}', outside the source`;
    return undefined;
  };
}
