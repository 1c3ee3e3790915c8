/**
 * Reusing a render whose inputs are unchanged: a command run again over the same project, target and cluster skips
 * Jinja2, Helm and kustomize, the largest part of a no-op deploy, as Argo CD's repo server reuses the manifests it
 * generated for the same revision and source. A render is reused only when all of these hold:
 * - the same Gantry code and tools (and the variables that configure them), the same request (target, args,
 *   context, discriminator, selection, fixed images) and kubeconfig contexts, and the same project files
 *   (project/project-files.ts);
 * - the same API server, Kubernetes version and served kinds;
 * - every read the render made of the cluster (Helm's `lookup` and discovery, render/helm-reads.ts; a
 *   clusterConfigMap vars source found by name) answers the same;
 * - every git include's and git vars source's ref names the commit it named then (a commit's files never change),
 *   and every OCI include's ref the manifest it named then;
 * - the render recorded nothing no later run can check (project/render-inputs.ts): vars sources beyond `values`,
 *   `file`, `git` and `clusterConfigMap` by name, sops-encrypted files, templates reading the clock or chance; and
 *   it holds no Secret and no sensitive value, so no record keeps one.
 * A chart's own random or time functions (`randAlphaNum`, `now`) outside Secrets keep their values as long as the
 * record does: at most MAX_AGE_MS, as Argo CD's manifest cache keeps them for its expiration (24 h by default).
 * A CLI keeps records in files of its cache; a controller or an agent, in its memory (RenderRecordStore).
 * A record holds the objects as rendered, before prepare's transform (an agent's, reading the live cluster), which
 * runs again on each reuse: what the transform read is never reused.
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from '../kube/cluster.ts';
import { KubeApiError } from '../kube/client.ts';
import { isSecret } from '../kube/object.ts';
import type { KluctlProject, ResolvedTarget } from '../project/kluctl-project.ts';
import { projectFilesDigest } from '../project/project-files.ts';
import { readDigest, RenderInputs, type GitRead, type KubeRead, type OciRead } from '../project/render-inputs.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { OciCache } from '../source/oci-cache.ts';
import type { RegistryCredentials } from '../source/oci-credentials.ts';
import type { Tools } from '../tools.ts';
import { hashOf, isPlainObject } from '../values.ts';
import { GANTRY_VERSION } from '../version.ts';
import { targetObjects, type RenderedTarget } from './rendered-target.ts';
import type { TargetRequest } from './request.ts';

/** How many renders a long-running process keeps in memory (inMemoryRenderCache). */
const MEMORY_RECORDS = 1000;

/** A record older than this is neither reused nor kept. */
export const MAX_AGE_MS = 24 * 3600_000;

/** The child environment's variables that choose or configure the programs a render runs. */
const TOOL_SETTINGS = /^(PATH|HELM_.*|KUSTOMIZE_.*|SOPS_.*|GNUPGHOME|PYTHON.*)$/;

/** A render as saved, with what it was rendered from. */
export interface RenderRecord {
  /** The key it is saved under (see keyOf); a file whose record has another key is not used. */
  key: string;
  /** Epoch ms. */
  savedAt: number;
  /** The API server it was rendered against, and clusterFacts of it then. */
  server: string;
  facts: string;
  target: ResolvedTarget;
  reads: KubeRead[];
  gitReads: GitRead[];
  ociReads: OciRead[];
  rendered: RenderedTarget;
}

/** A lookup's answer: the key to save a new render under, and the record when it still holds. */
export interface RenderLookup {
  key: string;
  /** A RenderInputs for the new render, holding why the project files alone forbid its reuse. */
  inputs: RenderInputs;
  record: RenderRecord | undefined;
}

/**
 * Where records are kept: files in a folder (RenderRecordFiles, the CLI's, across runs) or this process's memory
 * (RenderRecordMemory, a controller's or an agent's, for its lifetime).
 */
export interface RenderRecordStore {
  /** What was saved under `key`, unchecked; undefined when nothing was. */
  load(key: string): Promise<unknown>;
  save(record: RenderRecord): Promise<void>;
}

/**
 * Looks up and saves renders by the hash of everything they were made from (code, tools, project files, request,
 * kubeconfig contexts). A caller looks up, checks a found record with stillHolds before using it, else renders with
 * the lookup's RenderInputs and saves. Records older than MAX_AGE_MS (24 h) are not used. Holds no resources.
 */
export class RenderCache {
  private readonly code: string;
  private readonly store: RenderRecordStore;

  /**
   * @param code identifies the running Gantry code: a record saved by other code is not used.
   * @param store where the records are kept.
   */
  constructor(code: string, store: RenderRecordStore) {
    this.code = code;
    this.store = store;
  }

  /**
   * The key of a request, and the record saved under it if there is one of the last MAX_AGE_MS (not yet checked
   * against the cluster: see stillHolds).
   * @throws Error when the project's folder cannot be read.
   */
  async lookup(project: KluctlProject, request: TargetRequest, kubeConfig: KubeConfig, tools: Tools): Promise<RenderLookup> {
    const files = await projectFilesDigest(project.dir);
    const key = hashOf({
      code: this.code,
      tools: { paths: tools.paths, env: Object.entries(tools.env).filter(([name]) => TOOL_SETTINGS.test(name)) },
      project: project.dir,
      files: files.digest,
      request: { ...request, projectDir: undefined },
      kubeconfig: {
        current: kubeConfig.getCurrentContext(),
        contexts: kubeConfig.getContexts(),
        clusters: kubeConfig.getClusters().map(({ name, server }) => ({ name, server })),
      },
    });
    const inputs = new RenderInputs();
    for (const reason of files.notReusable) inputs.cannotReuse(reason);
    return { key, inputs, record: files.notReusable.length > 0 ? undefined : await this.load(key) };
  }

  /**
   * Saves a render under `key` when nothing forbids its reuse (see the module's comment).
   * @returns why it was not saved; empty when it was.
   */
  async save(record: Omit<RenderRecord, 'savedAt' | 'reads' | 'gitReads' | 'ociReads'>, inputs: RenderInputs): Promise<string[]> {
    const reasons = [...inputs.notReusable, ...secretsOf(record.rendered)];
    if (reasons.length > 0) return reasons;
    const { reads, gitReads, ociReads } = inputs;
    await this.store.save({ ...record, savedAt: Date.now(), reads, gitReads, ociReads });
    return [];
  }

  private async load(key: string): Promise<RenderRecord | undefined> {
    const saved = await this.store.load(key);
    if (!isPlainObject(saved) || saved['key'] !== key || typeof saved['savedAt'] !== 'number') return undefined;
    return Date.now() - saved['savedAt'] < MAX_AGE_MS ? (saved as unknown as RenderRecord) : undefined;
  }
}

/** Records as files in a folder, readable by their owner only, one per key; expired ones are dropped on each save. */
export class RenderRecordFiles implements RenderRecordStore {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  async load(key: string): Promise<unknown> {
    return readFile(this.fileOf(key), 'utf8')
      .then((text) => JSON.parse(text) as unknown)
      .catch(() => undefined);
  }

  async save(record: RenderRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.fileOf(record.key);
    const temp = `${file}.${process.pid}.partial`;
    await writeFile(temp, JSON.stringify(record), { mode: 0o600 });
    await rename(temp, file);
    await this.dropExpired();
  }

  private fileOf(key: string): string {
    return path.join(this.dir, `${key.slice(0, 32)}.json`);
  }

  private async dropExpired(): Promise<void> {
    const oldest = Date.now() - MAX_AGE_MS;
    for (const name of await readdir(this.dir).catch(() => [])) {
      const file = path.join(this.dir, name);
      if (((await stat(file).catch(() => undefined))?.mtimeMs ?? Infinity) < oldest) await rm(file, { force: true });
    }
  }
}

/**
 * Records in this process's memory, at most `max` of them: the least recently used goes first. A controller looks up
 * one key per deployment and source revision, so a `max` above its number of deployments keeps every current one.
 * Each is kept as JSON text, so that a deploy may change the objects it was handed without changing the record.
 */
export class RenderRecordMemory implements RenderRecordStore {
  private readonly max: number;
  private readonly records = new Map<string, string>();

  constructor(max: number) {
    this.max = max;
  }

  async load(key: string): Promise<unknown> {
    const text = this.records.get(key);
    if (text === undefined) return undefined;
    this.keep(key, text);
    return JSON.parse(text) as unknown;
  }

  async save(record: RenderRecord): Promise<void> {
    this.keep(record.key, JSON.stringify(record));
    for (const key of this.records.keys()) {
      if (this.records.size <= this.max) break;
      this.records.delete(key);
    }
  }

  /** Sets `key` last in the Map's order, the most recently used. */
  private keep(key: string, text: string): void {
    this.records.delete(key);
    this.records.set(key, text);
  }
}

/**
 * The render cache of a controller or an agent: records in memory (at most MEMORY_RECORDS), so that a reconcile or
 * sync of an unchanged revision skips its render, as Plural's agent skips a service whose digest it has seen.
 */
export function inMemoryRenderCache(): RenderCache {
  return new RenderCache(GANTRY_VERSION, new RenderRecordMemory(MEMORY_RECORDS));
}

/** Where a record's git and OCI refs are resolved again: the engine's caches and the command's registry credentials. */
export interface RenderSources {
  git: GitCache;
  oci: OciCache;
  registries: RegistryCredentials;
}

/**
 * Whether `record` still holds on `cluster`: the same API server, Kubernetes version and served kinds, every read of
 * the render answered the same again (read at once, each as it was sent), every git ref resolves to the same commit
 * (fetched as the cache's refresh interval allows) and every OCI ref to the same manifest digest. A repository or
 * registry that cannot be reached means no: the render that follows says why.
 * @throws ClusterUnreachableError, or the signal's reason.
 */
export async function stillHolds(record: RenderRecord, cluster: Cluster, sources: RenderSources, signal?: AbortSignal): Promise<boolean> {
  if (record.server !== cluster.client.server || record.facts !== (await clusterFacts(cluster))) return false;
  const unreachable = () => undefined;
  const [digests, commits, manifests] = await Promise.all([
    Promise.all(record.reads.map((read) => digestOfRead(cluster, read))),
    Promise.all(record.gitReads.map(({ url, ref }) => sources.git.resolve(url, ref, {}, signal).catch(unreachable))),
    Promise.all(record.ociReads.map(({ url, ref }) => sources.oci.resolve(url, ref, sources.registries, signal).catch(unreachable))),
  ]);
  signal?.throwIfAborted();
  return (
    digests.every((digest, index) => digest === record.reads[index]?.digest) &&
    commits.every((commit, index) => commit === record.gitReads[index]?.commit) &&
    manifests.every((digest, index) => digest === record.ociReads[index]?.digest)
  );
}

/** sha256 of what a render reads of every cluster: its Kubernetes version and the kinds it serves, with their scope. */
export async function clusterFacts(cluster: Cluster): Promise<string> {
  const [version, resources] = await Promise.all([cluster.version(), cluster.discovery.resources()]);
  return hashOf({ version, resources: resources.map(({ group, version, kind, namespaced }) => [group, version, kind, namespaced]) });
}

async function digestOfRead(cluster: Cluster, read: KubeRead): Promise<string> {
  try {
    return readDigest(200, await cluster.client.request('GET', read.path, { accept: read.accept }));
  } catch (error) {
    if (error instanceof KubeApiError) return readDigest(error.status, undefined);
    throw error;
  }
}

function secretsOf(rendered: RenderedTarget): string[] {
  if (rendered.sensitiveValues.length > 0) return ['the render holds sensitive values'];
  const secret = targetObjects(rendered).find(isSecret);
  return secret ? [`the render holds the Secret ${secret.metadata.namespace ?? ''}/${secret.metadata.name}`] : [];
}
