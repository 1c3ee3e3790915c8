/**
 * The git repository cache every part of Gantry shares (git includes, git vars, git Helm charts, the controller's
 * sources): one bare mirror per URL and credentials, fetched at most once per `refreshMs`, and one immutable
 * snapshot (plain files, no .git) per commit. Mirrors are per credentials because a mirror fetched with one
 * KluctlDeployment's Secret must not serve another that lacks it: each proves its own access by fetching. Snapshots are created in a temporary folder and renamed into place, so a reader never
 * sees half a checkout; mirrors are locked across processes while git writes to them, and calls for the same URL
 * in this process are queued, so concurrent reconciles and CLI runs can share one cache safely.
 *
 * git itself never prompts (a missing credential fails at once instead of hanging a reconcile), ignores the machine's
 * and the user's config, and runs with a HOME of its own inside the cache, so no user setting (credential helpers,
 * url rewrites, hooks) changes what Gantry fetches.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
// Loaded with this module, never lazily: its signal-exit hooks SIGTERM, and hooked after a role's own once-listener it
// kills the process in the middle of a graceful stop (seen as a controller that never released its Lease).
import lockfile from 'proper-lockfile';
import type { RunResult } from '../exec.ts';
import type { Tools } from '../tools.ts';
import { newestVersion } from '../semver.ts';
import { isDirectory, isFile } from '../files.ts';
import { markUsed, removeUnused } from './cache-entries.ts';
import { messageOf } from '../problems.ts';

/** Suffix of the folder a mirror's cross-process lock is taken on. */
const LOCK_SUFFIX = '.lock-target';

/**
 * Which commit to use: a branch, a tag, a commit, or the newest tag matching a semver range (Masterminds rules, as
 * Flux's GitRepository); none means the remote's default branch.
 */
export interface GitRef {
  branch?: string;
  tag?: string;
  commit?: string;
  semver?: string;
}

/** How to reach a repository that needs credentials: environment for git (see src/source/git-credentials.ts). */
export interface GitAccess {
  env?: Record<string, string>;
  /** Fingerprint of the credentials (never the credentials themselves): separates their mirror from others'. */
  key?: string;
}

export interface GitCacheOptions {
  /** Folder of the cache (mirrors/, snapshots/, home/). */
  root: string;
  /** Runs git, with the engine's environment. */
  tools: Tools;
  /** A mirror fetched less than this many milliseconds ago is not fetched again (default 60 s). */
  refreshMs?: number;
}

/** Options of one git command. */
interface GitRun {
  cwd?: string;
  /** Extra environment, e.g. GIT_SSH_COMMAND or GIT_ASKPASS for credentials. */
  env?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

const GIT_TIMEOUT_MS = 5 * 60_000;

/** What GitCache.refs lists. */
export interface RemoteRefs {
  /** The branch HEAD names, without `refs/heads/`; undefined for a repository without one. */
  defaultBranch: string | undefined;
  /** `refs/heads/<branch>` and `refs/tags/<tag>` with the commit each points to. */
  refs: Array<{ name: string; commit: string }>;
}

export interface Checkout {
  /** Folder holding the files of `commit`; never modified after creation. */
  dir: string;
  commit: string;
}

/**
 * A handle on one cache folder (`root`); one per process and folder, shared by every caller, several processes may
 * use the same folder. resolve, fetch, refs and checkout of one URL and credentials run one after another in this
 * process. Git runs at most GIT_TIMEOUT_MS (5 min) per command. Nothing to close: sweep() removes what went unused.
 */
export class GitCache {
  readonly root: string;
  private readonly tools: Tools;
  private readonly refreshMs: number;
  private readonly lastFetch = new Map<string, number>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private homeReady: Promise<unknown> | undefined;

  constructor(options: GitCacheOptions) {
    this.root = options.root;
    this.tools = options.tools;
    this.refreshMs = options.refreshMs ?? 60_000;
  }

  /**
   * The tag names of a remote repository, without fetching it into the cache.
   * @throws Error naming the URL and git's reason when it cannot be listed.
   */
  async remoteTags(url: string): Promise<string[]> {
    const { stdout } = await this.git(['ls-remote', '--tags', '--refs', url]).catch((error: Error) => {
      throw new Error(`git repository ${url} could not be listed: ${gitFailure(error)}`);
    });
    return stdout.split('\n').flatMap((line) => {
      const ref = line.split('\t')[1];
      return ref?.startsWith('refs/tags/') ? [ref.slice('refs/tags/'.length)] : [];
    });
  }

  /**
   * The commit `ref` points to, fetching the mirror first unless it was fetched recently.
   * @throws Error naming the URL when it cannot be fetched, or the ref when it does not exist.
   */
  async resolve(url: string, ref: GitRef = {}, access: GitAccess = {}, signal?: AbortSignal): Promise<string> {
    return this.serialized(mirrorKey(url, access), async () => {
      signal?.throwIfAborted();
      const { mirror, unchanged } = await this.updateMirror(url, Boolean(ref.commit), access, { signal });
      const commit = (unchanged && commitIn(unchanged, ref)) ?? (await this.resolveRef(mirror, ref));
      if (commit) return commit;
      // A pinned commit newer than the mirror: fetch once before giving up.
      if (ref.commit) {
        const { mirror: fetched } = await this.updateMirror(url, false, access, { force: true, signal });
        return (await this.resolveRef(fetched, ref)) ?? missingRef(url, ref);
      }
      return missingRef(url, ref);
    });
  }

  /**
   * Fetches the mirror now, whatever its age: for a poll, a push webhook, or a request that must see the newest
   * commits.
   * @throws Error naming the URL when it cannot be fetched.
   */
  async fetch(url: string, access: GitAccess = {}, signal?: AbortSignal): Promise<void> {
    await this.serialized(mirrorKey(url, access), () => this.updateMirror(url, false, access, { force: true, signal }));
  }

  /**
   * The branches and tags of a repository (full ref names, annotated tags peeled to their commits, sorted by name) and
   * its default branch, fetching the mirror first unless it was fetched recently.
   * @throws Error naming the URL when it cannot be fetched.
   */
  async refs(url: string, access: GitAccess = {}, signal?: AbortSignal): Promise<RemoteRefs> {
    return this.serialized(mirrorKey(url, access), async () => {
      const { mirror } = await this.updateMirror(url, false, access, { signal });
      const format = '--format=%(refname) %(objectname) %(*objectname)';
      const { stdout } = await this.git(['for-each-ref', '--sort=refname', format, 'refs/heads', 'refs/tags'], { cwd: mirror });
      const refs = stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [name = '', object = '', peeled] = line.split(' ');
          return { name, commit: peeled || object };
        });
      const head = await this.git(['symbolic-ref', '--quiet', 'HEAD'], { cwd: mirror }).catch(() => undefined);
      return { defaultBranch: head?.stdout.trim().replace(/^refs\/heads\//, '') || undefined, refs };
    });
  }

  /** The files of the commit `ref` points to (see resolve for errors). */
  async checkout(url: string, ref: GitRef = {}, access: GitAccess = {}, signal?: AbortSignal): Promise<Checkout> {
    const commit = await this.resolve(url, ref, access, signal);
    const dir = path.join(this.root, 'snapshots', urlKey(url), commit);
    const key = mirrorKey(url, access);
    if (!(await isDirectory(dir))) await this.serialized(key, () => this.createSnapshot(this.mirrorDir(key), commit, dir, signal));
    await markUsed(dir);
    return { dir, commit };
  }

  /**
   * Removes mirrors and snapshots nobody used for `maxAgeMs` (see src/source/cache-entries.ts); a mirror is removed
   * under its lock, so no git process of another Gantry is writing to it.
   * @returns how many entries were removed.
   */
  async sweep(maxAgeMs: number): Promise<number> {
    const snapshots = path.join(this.root, 'snapshots');
    let removed = 0;
    for (const repository of await readdir(snapshots).catch(() => [] as string[])) {
      removed += (await removeUnused(path.join(snapshots, repository), maxAgeMs)).length;
    }
    const mirrors = await removeUnused(path.join(this.root, 'mirrors'), maxAgeMs, async (mirror) => {
      // Lock folders stay: another process may be about to lock one.
      if (!mirror.endsWith(LOCK_SUFFIX)) await withFileLock(mirror, () => rm(mirror, { recursive: true, force: true }));
    });
    return removed + mirrors.filter((mirror) => !mirror.endsWith(LOCK_SUFFIX)).length;
  }

  /** Makes the next resolve of `url` fetch, whatever the credentials and however recent the last fetch (a push was announced). */
  expire(url: string): void {
    const prefix = urlKey(url);
    for (const key of this.lastFetch.keys()) if (key.startsWith(prefix)) this.lastFetch.delete(key);
  }

  /** Runs `work` after every earlier call with the same key in this process has finished. */
  private serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(key, next);
    return next;
  }

  /**
   * Clones or fetches the mirror; a commit ref that is already present needs no fetch at all.
   * @returns the mirror's folder, and `unchanged`, the commits the remote's refs point to, when the remote was asked
   *   just now and the mirror already held exactly its refs (no fetch ran).
   */
  private async updateMirror(
    url: string,
    wantsCommit: boolean,
    access: GitAccess,
    { force = false, signal }: { force?: boolean; signal?: AbortSignal | undefined } = {},
  ): Promise<{ mirror: string; unchanged?: Map<string, string> }> {
    const key = mirrorKey(url, access);
    const mirror = this.mirrorDir(key);
    const fresh = Date.now() - (this.lastFetch.get(key) ?? 0) < this.refreshMs;
    await markUsed(mirror);
    if (!force && (await isDirectory(mirror)) && (fresh || wantsCommit)) return { mirror };
    await mkdir(path.dirname(mirror), { recursive: true });
    let unchanged: Map<string, string> | undefined;
    await withFileLock(mirror, async () => {
      try {
        if (await isFile(path.join(mirror, 'HEAD'))) {
          // Most fetches of a polled repository find nothing new: asking the remote for its refs is one round trip
          // and no pack negotiation, and `git fetch` runs only when a branch or tag moved, appeared or went.
          const [remote, local] = await Promise.all([this.remoteRefs(mirror, access, signal), this.mirrorRefs(mirror)]);
          if (remote.refs === local) unchanged = remote.commits;
          else {
            await this.git(
              ['fetch', '--prune', '--prune-tags', '--force', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'],
              {
                cwd: mirror,
                env: access.env,
                signal,
              },
            );
          }
          await this.followHead(mirror, remote.head);
        } else {
          await this.git(['clone', '--mirror', '--quiet', url, mirror], { env: access.env, signal });
        }
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new Error(`git repository ${url} could not be fetched: ${gitFailure(error)}`);
      }
    });
    this.lastFetch.set(key, Date.now());
    return unchanged ? { mirror, unchanged } : { mirror };
  }

  /**
   * The remote's branches and tags as sorted `<ref> <object>` lines (annotated tags as their tag objects, the form
   * mirrorRefs gives), and the branch its HEAD names (`refs/heads/main`), undefined when the server does not
   * say (an empty repository, a server that hides it). The whole list comes back whatever patterns are given (git
   * filters patterns on the client), so it is asked for once, unfiltered, and in git's protocol version 0, whose
   * first answer is the list: version 2 first answers with its capabilities and needs a second request for the refs.
   * `commits` maps `HEAD` and each ref to the commit it points to (annotated tags peeled).
   * @throws CommandError when the remote cannot be reached.
   */
  private async remoteRefs(
    mirror: string,
    access: GitAccess,
    signal: AbortSignal | undefined,
  ): Promise<{ refs: string; head?: string; commits: Map<string, string> }> {
    const { stdout } = await this.git(['-c', 'protocol.version=0', 'ls-remote', '--symref', 'origin'], {
      cwd: mirror,
      env: access.env,
      signal,
    });
    const refs: string[] = [];
    const commits = new Map<string, string>();
    let head: string | undefined;
    for (const line of stdout.split('\n')) {
      const [object = '', name = ''] = line.split('\t');
      if (name === 'HEAD' && object.startsWith('ref: refs/heads/')) head = object.slice('ref: '.length);
      else if (name.endsWith('^{}')) commits.set(name.slice(0, -'^{}'.length), object);
      else {
        if (/^refs\/(heads|tags)\//.test(name)) refs.push(`${name} ${object}`);
        if (!commits.has(name)) commits.set(name, object);
      }
    }
    return { refs: refs.sort().join('\n'), head, commits };
  }

  /** The mirror's branches and tags, in remoteRefs' form. */
  private async mirrorRefs(mirror: string): Promise<string> {
    const { stdout } = await this.git(['for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads', 'refs/tags'], { cwd: mirror });
    return stdout.split('\n').filter(Boolean).sort().join('\n');
  }

  /**
   * Points the mirror's HEAD (its default branch) at `head` when that changed: a mirror is cloned with the remote's
   * default branch, and `git fetch` never moves it after (`git remote set-head` works on remote-tracking refs, which a
   * mirror does not have).
   */
  private async followHead(mirror: string, head: string | undefined): Promise<void> {
    if (!head) return;
    const current = (await readFile(path.join(mirror, 'HEAD'), 'utf8').catch(() => '')).trim();
    if (current !== `ref: ${head}`) await this.git(['symbolic-ref', 'HEAD', head], { cwd: mirror });
  }

  /**
   * Runs `git <args>` with the cache's own HOME.
   * @throws CommandError (src/exec.ts) with git's stderr when git fails.
   */
  private async git(args: readonly string[], options: GitRun = {}): Promise<RunResult> {
    const home = path.join(this.root, 'home');
    await (this.homeReady ??= mkdir(home, { recursive: true }));
    return this.tools.run('git', args, {
      cwd: options.cwd,
      timeoutMs: GIT_TIMEOUT_MS,
      signal: options.signal,
      env: {
        HOME: home,
        XDG_CONFIG_HOME: home,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: 'true',
        SSH_ASKPASS: 'true',
        ...options.env,
      },
    });
  }

  /** The commit `ref` names in the mirror, or undefined when it names nothing. */
  private async resolveRef(mirror: string, ref: GitRef): Promise<string | undefined> {
    if (ref.semver !== undefined) {
      const tags = (await this.git(['tag', '--list'], { cwd: mirror })).stdout.split('\n').filter(Boolean);
      const newest = newestVersion(tags, ref.semver);
      return newest === undefined ? undefined : this.resolveRef(mirror, { tag: newest });
    }
    const wanted = ref.commit ?? (ref.tag ? `refs/tags/${ref.tag}` : ref.branch ? `refs/heads/${ref.branch}` : 'HEAD');
    const result = await this.git(['rev-parse', '--verify', '--quiet', `${wanted}^{commit}`], { cwd: mirror }).catch(() => undefined);
    return result?.stdout.trim() || undefined;
  }

  private mirrorDir(key: string): string {
    return path.join(this.root, 'mirrors', key);
  }

  private async createSnapshot(mirror: string, commit: string, dir: string, signal: AbortSignal | undefined): Promise<void> {
    if (await isDirectory(dir)) return;
    await mkdir(path.dirname(dir), { recursive: true });
    const temp = await mkdtemp(`${dir}.partial-`);
    try {
      await this.git(['clone', '--quiet', '--local', '--no-checkout', mirror, temp], { signal });
      await this.git(['-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], { cwd: temp, signal });
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

/**
 * The commit a branch, tag or the default branch names in `commits` (remoteRefs' map), undefined for a commit or a
 * semver range (resolveRef checks those against the mirror) and for a ref the map lacks. A tag is taken to name a
 * commit, as deployable tags do (rev-parse would refuse a tag of a tree).
 */
function commitIn(commits: ReadonlyMap<string, string>, ref: GitRef): string | undefined {
  if (ref.commit !== undefined || ref.semver !== undefined) return undefined;
  return commits.get(ref.tag ? `refs/tags/${ref.tag}` : ref.branch ? `refs/heads/${ref.branch}` : 'HEAD');
}

function missingRef(url: string, ref: GitRef): never {
  const what =
    ref.semver !== undefined
      ? `tag matching ${ref.semver}`
      : ref.commit
        ? `commit ${ref.commit}`
        : ref.tag
          ? `tag ${ref.tag}`
          : ref.branch
            ? `branch ${ref.branch}`
            : 'a default branch';
  throw new Error(`git repository ${url} has no ${what}`);
}

async function withFileLock(dir: string, work: () => Promise<void>): Promise<void> {
  const lockTarget = `${dir}${LOCK_SUFFIX}`;
  await mkdir(lockTarget, { recursive: true });
  const release = await lockfile.lock(lockTarget, { retries: { retries: 600, minTimeout: 100, maxTimeout: 1000 }, stale: 60_000 });
  try {
    await work();
  } finally {
    await release();
  }
}

function mirrorKey(url: string, access: GitAccess): string {
  return access.key === undefined ? urlKey(url) : `${urlKey(url)}-${access.key.slice(0, 16)}`;
}

function urlKey(url: string): string {
  const readable = url
    .replace(/^[a-z]+:\/\//, '')
    .replace(/[^a-zA-Z0-9._-]+/g, '_')
    .slice(-60);
  return `${readable}-${createHash('sha256').update(url).digest('hex').slice(0, 12)}`;
}

/**
 * The line of git's output that says what failed. When git only reports that its transport failed ("Could not read
 * from remote repository"), the reason is what ssh printed just before: a host key problem (two lines: the cause
 * and "Host key verification failed."), a refused key, an unreachable host.
 */
function gitFailure(error: unknown): string {
  const message = messageOf(error);
  const lines = message
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const index = lines.findIndex((line) => /^(fatal|error):/.test(line));
  if (index < 0) return lines[0] ?? message;
  const failure = lines[index] as string;
  if (index === 0 || !failure.includes('Could not read from remote repository')) return failure;
  const before = lines.slice(Math.max(0, index - 2), index);
  const reason = before.at(-1)?.startsWith('Host key verification failed') ? before : before.slice(-1);
  return `${failure.replace(/\.$/, '')}: ${reason.join(' ')}`;
}
