/**
 * Keeps each git repository's health current: fetches every repository this replica owns on an interval (and any
 * one at once when it is added or a push webhook names it) through the engine's git cache, recording PULLABLE, or
 * FAILED with git's error, as Plural's console does for its GitRepository. Repositories are spread over the live
 * replicas by replica-set.ts, so each is fetched on the interval by one replica.
 */
import type { Kysely } from 'kysely';
import { normalizeRepoUrl } from '../gitops/repo-url.ts';
import type { Logger } from '../logger.ts';
import { sleep } from '../sleep.ts';
import type { GitCache } from '../source/git-cache.ts';
import { prepareGitAccess } from '../source/git-credentials.ts';
import { listRepositories, recordPull, repositoryCredentials } from '../store/repositories.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { messageOf } from '../problems.ts';

export interface RepositoryPollerOptions {
  db: Kysely<Database>;
  box: SecretBox;
  git: GitCache;
  /** Milliseconds between two fetches of every repository. */
  intervalMs: number;
  log: Logger;
  /** Called after a successful fetch (new commits become revisions there). */
  onPulled: (repositoryId: string) => Promise<void>;
  /** Whether this replica polls the repository on the interval (replica-set.ts); explicit polls always run. */
  owns: (repositoryId: string) => boolean;
  /** Called after each round over every repository (helm version ranges are resolved again there). */
  onRound?: () => Promise<void>;
}

/**
 * One server process's repository fetcher. start() (a second call does nothing) runs a first round at once, then one
 * every `intervalMs`, repositories one after another; poll() and pollPushed() may run beside it. The owner calls
 * stop() at shutdown: it aborts the fetches under way and waits for the loop to end.
 */
export class RepositoryPoller {
  readonly #options: RepositoryPollerOptions;
  readonly #stopped = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: RepositoryPollerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Fetches one repository now and records its health; never throws (a failure is the health). */
  async poll(id: string, url: string): Promise<void> {
    const { db, box, git, log } = this.#options;
    let error: string | undefined;
    try {
      const credentials = await repositoryCredentials(db, box, id);
      const access = credentials && (await prepareGitAccess(credentials));
      try {
        await git.fetch(url, access ?? {}, this.#stopped.signal);
      } finally {
        await access?.cleanup();
      }
    } catch (failure) {
      if (this.#stopped.signal.aborted) return;
      error = messageOf(failure);
      log.warn({ repository: url, error }, 'git repository cannot be fetched');
    }
    await recordPull(db, id, error);
    if (error === undefined) await this.#options.onPulled(id);
  }

  /**
   * Polls now every repository one of `urls` names (compared in normal form: scheme, credentials and `.git` aside),
   * for a push webhook. @returns how many repositories matched.
   */
  async pollPushed(urls: readonly string[]): Promise<number> {
    const pushed = new Set(urls.map(normalizeRepoUrl).filter((url) => url !== undefined));
    const matching = (await listRepositories(this.#options.db, this.#options.box)).filter((repository) =>
      pushed.has(normalizeRepoUrl(repository.url) ?? ''),
    );
    await Promise.all(matching.map((repository) => this.poll(repository.id, repository.url)));
    return matching.length;
  }

  async stop(): Promise<void> {
    this.#stopped.abort(new Error('server stopping'));
    await this.#loop?.catch(() => undefined);
  }

  async #run(): Promise<void> {
    const signal = this.#stopped.signal;
    while (!signal.aborted) {
      try {
        const repositories = await listRepositories(this.#options.db, this.#options.box);
        for (const repository of repositories) {
          if (this.#options.owns(repository.id)) await this.poll(repository.id, repository.url);
        }
        await this.#options.onRound?.();
      } catch (error) {
        if (!signal.aborted) this.#options.log.error({ err: error }, 'polling git repositories failed');
      }
      await sleep(this.#options.intervalMs, signal).catch(() => undefined);
    }
  }
}
