/**
 * Turns a service's source into what a revision pins: for a folder of a repository (`git: {ref, folder}`,
 * Plural's fields) the commit the ref points to and the digest of the folder's tarball (a ref is a branch, else a
 * tag, or a full commit sha); for a Helm chart the version it resolves to and the digest of the Kluctl project
 * built around it (helm-sources.ts), with valuesFiles read from the git folder when the service has one; for a
 * cluster's own agent (kept-agents.ts) the objects of its Deployment, and for a cluster the fleet makes through Cluster
 * API (provisioned-clusters.ts) its Cluster API objects, both rendered here.
 */
import { cp, lstat, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { ChartTools } from '../helm/helm-cli.ts';
import { type GitCache, type GitRef } from '../source/git-cache.ts';
import { prepareGitAccess } from '../source/git-credentials.ts';
import { NotFoundError } from '../store/errors.ts';
import { helmCredentialsFor } from '../store/helm-repositories.ts';
import { getRepository, type Repository, repositoryCredentials } from '../store/repositories.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { ExtraSource, HelmSpec, ResolvedSource, ServiceSpec } from '../store/services.ts';
import { PathEscapeError, resolveInside } from '../files.ts';
import { HttpError } from '../http/errors.ts';
import { packHelmProject, resolveChartVersion } from './helm-sources.ts';
import type { TarballStore } from './tarballs.ts';
import { capiClusterManifests } from '../capi/cluster-manifests.ts';
import type { KubeObject } from '../kube/object.ts';
import { agentServiceManifests } from '../install/agent.ts';
import { toYamlDocuments } from '../yaml.ts';

export interface ServiceSourcesOptions {
  db: Kysely<Database>;
  box: SecretBox;
  git: GitCache;
  /** The engine's helm and chart cache: charts are pulled once per version into it. */
  charts: ChartTools;
  tarballs: TarballStore;
}

/** Where a request names the parts of a source, for error messages. */
export interface SourceFields {
  repository: string;
  ref: string;
  folder: string;
  /** The helm source; its parts are `<helm>.url`, `<helm>.version`, … */
  helm: string;
  /** The extra sources; source i's parts are `<sources>.<i>.path`, `<sources>.<i>.git.ref`, … (default body.sources). */
  sources?: string;
}

const DEFAULT_FIELDS: SourceFields = {
  repository: 'body.repository',
  ref: 'body.git.ref',
  folder: 'body.git.folder',
  helm: 'body.helm',
  sources: 'body.sources',
};

/** How a source is resolved (see ServiceSources.resolve). */
export interface ResolveOptions {
  /**
   * Fetch the repository first (an API request must see what was just pushed); otherwise the mirror the last poll
   * fetched serves.
   */
  fresh: boolean;
  /** Where the request named each part, for errors (e.g. `body.git.ref`). */
  fields?: SourceFields;
  signal?: AbortSignal;
}

/**
 * The server's resolver of service sources, shared by the route handlers, global services and pipelines: each call
 * resolves from the store, the git cache and the chart cache, and leaves the packed tarball in the TarballStore
 * under the digest it returns (sha256 hex). Errors a request can fix are HttpError 400 naming the request's field.
 * Stateless beyond its options, so calls may run concurrently; nothing to close.
 */
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
   * Resolves the spec's source, git or helm (see the file's comment).
   * @throws HttpError 400 naming the field: see resolve and resolveChartVersion/packHelmProject in helm-sources.ts.
   */
  async resolveSpec(spec: ServiceSpec, options: ResolveOptions = { fresh: false }): Promise<ResolvedSource> {
    const { helm, git, repositoryId } = spec;
    if (spec.agent) return { commit: '', digest: await this.#packObjects('agent.yaml', agentServiceManifests(spec.agent)) };
    if (spec.capi) return { commit: '', digest: await this.#packObjects('capi-cluster.yaml', capiClusterManifests(spec.capi)) };
    if (!helm) {
      if (!git || repositoryId === undefined) throw new Error('a service spec needs git (with a repository) or helm');
      if (spec.sources?.length) return await this.#resolveCombined(repositoryId, git, spec.sources, options);
      return await this.resolve(repositoryId, git, options);
    }
    const chartVersion = await this.chartVersion(helm, options.fields);
    const credentials = await helmCredentialsFor(this.#options.db, this.#options.box, helm.url);
    const pack = (valuesDir?: string) =>
      packHelmProject(
        { helm, chartVersion, namespace: spec.namespace, valuesDir, ...(credentials ? { credentials } : {}) },
        this.#options.charts,
        this.#options.tarballs,
        (options.fields ?? DEFAULT_FIELDS).helm,
      );
    if (!git || repositoryId === undefined) return { commit: '', digest: await pack(), chartVersion };
    return await this.#withFolder(repositoryId, git, options, async (folder, commit) => ({
      commit,
      digest: await pack(folder),
      chartVersion,
    }));
  }

  /** Packs objects the server renders (an agent service's, a provisioned cluster's) as the one file `file`. */
  async #packObjects(file: string, objects: KubeObject[]): Promise<string> {
    const temp = await mkdtemp(path.join(os.tmpdir(), 'gantry-server-objects-'));
    try {
      await writeFile(path.join(temp, file), toYamlDocuments(objects));
      return await this.#options.tarballs.pack(temp);
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  /** The chart version the helm source's version (or range) resolves to now. @throws HttpError 400 (see resolveChartVersion). */
  async chartVersion(helm: HelmSpec, fields: SourceFields = DEFAULT_FIELDS): Promise<string> {
    const credentials = await helmCredentialsFor(this.#options.db, this.#options.box, helm.url);
    return await resolveChartVersion(helm, this.#options.charts, fields.helm, credentials);
  }

  /**
   * Resolves the ref, checks the folder out and packs it.
   * @throws HttpError 400 naming the field: the repository cannot be fetched, the ref or the folder does not exist,
   *   or the folder holds a symlink leading outside it or to nothing.
   */
  async resolve(
    repositoryId: string,
    git: { ref: string; folder: string },
    options: ResolveOptions = { fresh: false },
  ): Promise<ResolvedSource> {
    const fields = options.fields ?? DEFAULT_FIELDS;
    return await this.#withFolder(repositoryId, git, options, async (folder, commit) => {
      const digest = await this.#options.tarballs.pack(folder).catch((error: unknown) => {
        if (error instanceof PathEscapeError)
          throw new HttpError(400, `folder ${JSON.stringify(git.folder)}: ${error.message}`, fields.folder);
        throw new HttpError(
          400,
          `folder ${JSON.stringify(git.folder)} does not exist or is empty at ${commit.slice(0, 12)}`,
          fields.folder,
        );
      });
      return { commit, digest };
    });
  }

  /**
   * Plural's multi-source services: the service's folder at the root of one folder, each extra source's folder at its
   * `path` (a folder of its own: nothing is merged, so no file of one source lands on or through another's), packed
   * as one tarball. The commit is the service's own; each source's is in sourceCommits.
   * @throws HttpError 400 as resolve does, for the service's folder and each source's (`<sources>.<i>.git.folder`, …),
   *   and naming `<sources>.<i>.path` when the path leaves the combined folder or is taken already.
   */
  async #resolveCombined(
    repositoryId: string,
    git: { ref: string; folder: string },
    sources: readonly ExtraSource[],
    options: ResolveOptions,
  ): Promise<ResolvedSource> {
    const fields = options.fields ?? DEFAULT_FIELDS;
    const temp = await mkdtemp(path.join(os.tmpdir(), 'gantry-sources-'));
    const combined = path.join(temp, 'combined');
    try {
      const commit = await this.#withFolder(repositoryId, git, options, async (folder, commit) => {
        await copyFolder(folder, combined, { folder: git.folder, commit, field: fields.folder });
        return commit;
      });
      const sourceCommits: string[] = [];
      for (const [index, source] of sources.entries()) {
        const field = `${fields.sources ?? 'body.sources'}.${index}`;
        const target = await freeFolder(combined, source.path, `${field}.path`);
        const sourceFields = { ...fields, repository: `${field}.repository`, ref: `${field}.git.ref`, folder: `${field}.git.folder` };
        sourceCommits.push(
          await this.#withFolder(source.repositoryId, source.git, { ...options, fields: sourceFields }, async (folder, commit) => {
            await copyFolder(folder, target, { folder: source.git.folder, commit, field: sourceFields.folder });
            return commit;
          }),
        );
      }
      const digest = await this.#options.tarballs.pack(combined).catch((error: unknown) => {
        // Links were checked in each checkout's folder; one leading out of its own source, or to nothing, lands here.
        if (error instanceof PathEscapeError)
          throw new HttpError(400, `the combined source: ${error.message}`, fields.sources ?? 'body.sources');
        throw error;
      });
      return { commit, digest, sourceCommits };
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  /** Fetches (or not, see ResolveOptions.fresh), checks the ref out and hands `use` the folder in the checkout. */
  async #withFolder<T>(
    repositoryId: string,
    git: { ref: string; folder: string },
    options: ResolveOptions,
    use: (folder: string, commit: string) => Promise<T>,
  ): Promise<T> {
    const { signal, fields = DEFAULT_FIELDS } = options;
    const { db, box } = this.#options;
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
      // With symlinks followed: a folder that is, or lies under, a link out of the checkout would pack the server's
      // own files into the agent's tarball and the revision diff.
      const folder = await resolveInside(checkout.dir, git.folder || '.', { label: 'folder', root: 'the repository' }).catch(
        (error: unknown) => {
          throw error instanceof PathEscapeError ? new HttpError(400, error.message, fields.folder) : error;
        },
      );
      return await use(folder, checkout.commit);
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

/**
 * Copies a checkout's folder with its symlinks as they are (pack checks where they lead).
 * @throws HttpError 400 naming `where.field` when the folder does not exist at the commit.
 */
async function copyFolder(from: string, to: string, where: { folder: string; commit: string; field: string }): Promise<void> {
  const found = await stat(from).catch(() => undefined);
  if (!found?.isDirectory())
    throw new HttpError(400, `folder ${JSON.stringify(where.folder)} does not exist at ${where.commit.slice(0, 12)}`, where.field);
  await cp(from, to, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
}

/**
 * The folder `name` (relative) of the combined source, which must not exist yet; its parents are made, resolved with
 * their symlinks inside `root`, so a link from the service's folder cannot carry a source out of the tarball.
 * @throws HttpError 400 naming `field` when the path leaves `root` or is taken.
 */
async function freeFolder(root: string, name: string, field: string): Promise<string> {
  if (name === '' || name === '.')
    throw new HttpError(400, "the root holds the service's own folder: give the source a path of its own", field);
  const parent = await resolveInside(root, path.posix.dirname(name), { label: 'path', root: 'the combined source' }).catch(
    (error: unknown) => {
      throw error instanceof PathEscapeError ? new HttpError(400, error.message, field) : error;
    },
  );
  await mkdir(parent, { recursive: true });
  const target = path.join(parent, path.posix.basename(name));
  if (await lstat(target).catch(() => undefined))
    throw new HttpError(
      400,
      `path ${JSON.stringify(name)} is taken by the service's folder or an earlier source: give each source a folder of its own`,
      field,
    );
  return target;
}

/**
 * `resolveSpec` for one pass of a tracker: specs with the same source (a global service's copies, one per cluster)
 * are resolved, checked out and packed once, not once per service (10,000 copies were 10,000 checkouts a fetch).
 */
export function resolverForOnePass(sources: ServiceSources): (spec: ServiceSpec) => Promise<ResolvedSource> {
  const resolved = new Map<string, Promise<ResolvedSource>>();
  return (spec) => {
    // The namespace is in a helm wrapper project, not in a git folder's tarball.
    const key = JSON.stringify([spec.repositoryId, spec.git, spec.helm, spec.helm ? spec.namespace : undefined, spec.sources]);
    const source = resolved.get(key) ?? sources.resolveSpec(spec);
    resolved.set(key, source);
    return source;
  };
}
