/**
 * Turns a service's source (a repository and `git: {ref, folder}`, Plural's fields) into what a revision pins:
 * the commit the ref points to and the digest of the folder's tarball. A ref is a branch, else a tag, or a full
 * commit sha.
 */
import path from 'node:path';
import type { Kysely } from 'kysely';
import { type GitCache, type GitRef } from '../source/git-cache.ts';
import { prepareGitAccess } from '../source/git-credentials.ts';
import { NotFoundError } from '../store/errors.ts';
import { getRepository, type Repository, repositoryCredentials } from '../store/repositories.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { ResolvedSource } from '../store/services.ts';
import { HttpError } from './errors.ts';
import type { TarballStore } from './tarballs.ts';

export interface ServiceSourcesOptions {
  db: Kysely<Database>;
  box: SecretBox;
  git: GitCache;
  tarballs: TarballStore;
}

/** Where a request names the parts of a source, for error messages. */
export interface SourceFields {
  repository: string;
  ref: string;
  folder: string;
}

const DEFAULT_FIELDS: SourceFields = { repository: 'body.repository', ref: 'body.git.ref', folder: 'body.git.folder' };

export class ServiceSources {
  readonly #options: ServiceSourcesOptions;

  constructor(options: ServiceSourcesOptions) {
    this.#options = options;
  }

  /**
   * The repository a request names by id or URL.
   * @throws HttpError 400 naming `field` when it is not registered.
   */
  async registeredRepository(idOrUrl: string, field: string): Promise<Repository> {
    return await getRepository(this.#options.db, this.#options.box, idOrUrl).catch((error: unknown) => {
      if (error instanceof NotFoundError)
        throw new HttpError(400, `repository ${JSON.stringify(idOrUrl)} is not registered (gantry repo add)`, field);
      throw error;
    });
  }

  /**
   * Resolves the ref, checks the folder out and packs it.
   * @param options.fresh fetch the repository first (an API request must see what was just pushed); otherwise the
   *   mirror the last poll fetched serves.
   * @param options.fields where the request named each part, for errors (e.g. `body.git.ref`).
   * @throws HttpError 400 naming the field: the repository cannot be fetched, the ref or the folder does not exist.
   */
  async resolve(
    repositoryId: string,
    git: { ref: string; folder: string },
    options: { fresh: boolean; fields?: SourceFields; signal?: AbortSignal } = { fresh: false },
  ): Promise<ResolvedSource> {
    const { signal, fields = DEFAULT_FIELDS } = options;
    const { db, box, tarballs } = this.#options;
    const repository = await getRepository(db, box, repositoryId);
    const credentials = await repositoryCredentials(db, box, repository.id);
    const access = credentials && (await prepareGitAccess(credentials));
    try {
      const cache = this.#options.git;
      const reach = options.fresh
        ? cache.fetch(repository.url, access ?? {}, signal)
        : cache.resolve(repository.url, {}, access ?? {}, signal);
      await reach.catch((error: Error) => {
        throw new HttpError(400, `repository ${repository.url} cannot be fetched: ${error.message}`, fields.repository);
      });
      const checkout = await this.#checkout(repository.url, git.ref, access ?? {}, signal).catch((error: Error) => {
        throw new HttpError(400, `ref ${JSON.stringify(git.ref)} not found in ${repository.url}: ${error.message}`, fields.ref);
      });
      const folder = path.resolve(checkout.dir, git.folder || '.');
      if (folder !== checkout.dir && !folder.startsWith(`${checkout.dir}${path.sep}`)) {
        throw new HttpError(400, `folder ${JSON.stringify(git.folder)} leaves the repository`, fields.folder);
      }
      const digest = await tarballs.pack(folder).catch(() => {
        throw new HttpError(
          400,
          `folder ${JSON.stringify(git.folder)} does not exist or is empty at ${checkout.commit.slice(0, 12)} of ${repository.url}`,
          fields.folder,
        );
      });
      return { commit: checkout.commit, digest };
    } finally {
      await access?.cleanup();
    }
  }

  async #checkout(url: string, ref: string, access: { env?: Record<string, string>; key?: string }, signal?: AbortSignal) {
    const candidates: GitRef[] = /^[0-9a-f]{40}$/.test(ref) ? [{ commit: ref }] : [{ branch: ref }, { tag: ref }];
    let failure: unknown;
    for (const candidate of candidates) {
      try {
        return await this.#options.git.checkout(url, candidate, access, signal);
      } catch (error) {
        failure ??= error;
      }
    }
    throw failure;
  }
}
