/**
 * The git repository cache every part of Gantry shares (git includes, git vars, git Helm charts, the controller's
 * sources): one bare mirror per URL, fetched at most once per `refreshMs`, and one immutable snapshot (plain
 * files, no .git) per commit. Snapshots are created in a temporary folder and renamed into place, so a reader never
 * sees half a checkout; mirrors are locked across processes while git writes to them, and calls for the same URL
 * in this process are queued, so concurrent reconciles and CLI runs can share one cache safely.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { git } from './git.ts';

/** Which commit to use: a branch, a tag or a commit; none means the remote's default branch. */
export interface GitRef {
  branch?: string;
  tag?: string;
  commit?: string;
}

export interface GitCacheOptions {
  /** Folder of the cache. Default: $GANTRY_CACHE_DIR/git or ~/.cache/gantry/git. */
  root?: string;
  /** A mirror fetched less than this many milliseconds ago is not fetched again (default 60 s). */
  refreshMs?: number;
}

export interface Checkout {
  /** Folder holding the files of `commit`; never modified after creation. */
  dir: string;
  commit: string;
}

export class GitCache {
  readonly root: string;
  private readonly refreshMs: number;
  private readonly lastFetch = new Map<string, number>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(options: GitCacheOptions = {}) {
    this.root = options.root ?? path.join(process.env['GANTRY_CACHE_DIR'] ?? path.join(os.homedir(), '.cache', 'gantry'), 'git');
    this.refreshMs = options.refreshMs ?? 60_000;
  }

  /**
   * The commit `ref` points to, fetching the mirror first unless it was fetched recently.
   * @throws Error naming the URL when it cannot be fetched, or the ref when it does not exist.
   */
  async resolve(url: string, ref: GitRef = {}): Promise<string> {
    return this.serialized(url, async () => {
      const mirror = await this.updateMirror(url, Boolean(ref.commit));
      const commit = await resolveRef(mirror, ref);
      if (commit) return commit;
      // A pinned commit newer than the mirror: fetch once before giving up.
      if (ref.commit) return (await resolveRef(await this.updateMirror(url, false, true), ref)) ?? missingRef(url, ref);
      return missingRef(url, ref);
    });
  }

  /** The files of the commit `ref` points to (see resolve for errors). */
  async checkout(url: string, ref: GitRef = {}): Promise<Checkout> {
    const commit = await this.resolve(url, ref);
    const dir = path.join(this.root, 'snapshots', urlKey(url), commit);
    if (!(await exists(dir))) await this.serialized(url, () => this.createSnapshot(url, commit, dir));
    return { dir, commit };
  }

  /** Runs `work` after every earlier call for the same URL in this process has finished. */
  private serialized<T>(url: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(url) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(url, next);
    return next;
  }

  private mirrorDir(url: string): string {
    return path.join(this.root, 'mirrors', urlKey(url));
  }

  /** Clones or fetches the mirror; a commit ref that is already present needs no fetch at all. */
  private async updateMirror(url: string, wantsCommit: boolean, force = false): Promise<string> {
    const mirror = this.mirrorDir(url);
    const fresh = Date.now() - (this.lastFetch.get(url) ?? 0) < this.refreshMs;
    if (!force && (await exists(mirror)) && (fresh || wantsCommit)) return mirror;
    await mkdir(path.dirname(mirror), { recursive: true });
    await withFileLock(mirror, async () => {
      try {
        if (await exists(path.join(mirror, 'HEAD'))) {
          await git(['fetch', '--prune', '--prune-tags', '--force', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'], { cwd: mirror });
          await git(['remote', 'set-head', 'origin', '--auto'], { cwd: mirror }).catch(() => undefined);
        } else {
          await git(['clone', '--mirror', '--quiet', url, mirror]);
        }
      } catch (error) {
        throw new Error(`git repository ${url} could not be fetched: ${firstLine(error)}`);
      }
    });
    this.lastFetch.set(url, Date.now());
    return mirror;
  }

  private async createSnapshot(url: string, commit: string, dir: string): Promise<void> {
    if (await exists(dir)) return;
    await mkdir(path.dirname(dir), { recursive: true });
    const temp = await mkdtemp(`${dir}.partial-`);
    try {
      await git(['clone', '--quiet', '--local', '--no-checkout', this.mirrorDir(url), temp]);
      await git(['-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], { cwd: temp });
      await rm(path.join(temp, '.git'), { recursive: true, force: true });
      await rename(temp, dir).catch(async (error: NodeJS.ErrnoException) => {
        // Another process created the same snapshot meanwhile; its copy is identical.
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
        await rm(temp, { recursive: true, force: true });
      });
    } catch (error) {
      await rm(temp, { recursive: true, force: true });
      throw error;
    }
  }
}

/** The commit `ref` names in the mirror, or undefined when it names nothing. */
async function resolveRef(mirror: string, ref: GitRef): Promise<string | undefined> {
  const wanted = ref.commit ?? (ref.tag ? `refs/tags/${ref.tag}` : ref.branch ? `refs/heads/${ref.branch}` : 'HEAD');
  const result = await git(['rev-parse', '--verify', '--quiet', `${wanted}^{commit}`], { cwd: mirror }).catch(() => undefined);
  return result?.stdout.trim() || undefined;
}

function missingRef(url: string, ref: GitRef): never {
  const what = ref.commit ? `commit ${ref.commit}` : ref.tag ? `tag ${ref.tag}` : ref.branch ? `branch ${ref.branch}` : 'a default branch';
  throw new Error(`git repository ${url} has no ${what}`);
}

async function withFileLock(dir: string, work: () => Promise<void>): Promise<void> {
  const lockTarget = `${dir}.lock-target`;
  await mkdir(lockTarget, { recursive: true });
  const release = await lockfile.lock(lockTarget, { retries: { retries: 600, minTimeout: 100, maxTimeout: 1000 }, stale: 60_000 });
  try {
    await work();
  } finally {
    await release();
  }
}

function urlKey(url: string): string {
  const readable = url.replace(/^[a-z]+:\/\//, '').replace(/[^a-zA-Z0-9._-]+/g, '_').slice(-60);
  return `${readable}-${createHash('sha256').update(url).digest('hex').slice(0, 12)}`;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split('\n').map((line) => line.trim()).filter(Boolean);
  return lines.find((line) => /^(fatal|error):/.test(line)) ?? lines[0] ?? message;
}
