/**
 * The first half of every command: choose the target, connect to its cluster, load the deployment tree and render
 * it completely into a RenderedTarget (or reuse an earlier render of unchanged inputs: render-cache.ts). Nothing
 * here changes the cluster; a command only applies or deletes after this returned.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Engine } from '../engine.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { ClusterPool } from '../kube/cluster-pool.ts';
import type { KubeObject } from '../kube/object.ts';
import { loadDeploymentItems, type DeploymentItem } from '../project/deployment-project.ts';
import type { ProjectEnvironment } from '../project/environment.ts';
import { isIncluded, type Inclusion } from '../project/inclusion.ts';
import { loadKluctlProject, resolveTarget, type KluctlProject, type ResolvedTarget } from '../project/kluctl-project.ts';
import { SensitiveValues } from '../project/sensitive.ts';
import { maskedProgress, type Progress } from '../progress.ts';
import { objectsHash } from '../render/objects-hash.ts';
import { renderProject, type RenderedItem } from '../render/render-project.ts';
import { startHelmReadsProxy } from '../render/helm-reads.ts';
import { clusterFacts, stillHolds, type RenderCache, type RenderRecord, type RenderSources } from './render-cache.ts';
import type { SopsEnv } from '../sops/decrypt.ts';
import { RegistryCredentials } from '../source/oci-credentials.ts';
import { RENDERED_TARGET_API_VERSION, targetObjects, type RenderedTarget, type TargetItem } from './rendered-target.ts';
import type { TargetRequest } from './request.ts';

/** Kubernetes version charts are rendered for when no cluster is connected. */
export const OFFLINE_KUBERNETES_VERSION = 'v1.35.0';

export interface PrepareOptions {
  /** The kubeconfig the target's context is looked up in; undefined renders offline (no cluster is read). */
  kubeConfig: KubeConfig | undefined;
  /** Keys for sops-encrypted files, added to the engine's child environment. */
  sopsEnv?: SopsEnv | undefined;
  /** Credentials for OCI includes (the CLI's, or a KluctlDeployment's spec.credentials.oci); none: anonymous. */
  registries?: RegistryCredentials | undefined;
  progress: Progress;
  /** Abandons the render: child processes are killed, requests aborted, and the signal's reason is thrown. */
  signal?: AbortSignal | undefined;
  /** Reuses an earlier render whose inputs are unchanged, and keeps this one (see render-cache.ts); only with a kubeconfig. */
  renderCache?: RenderCache | undefined;
  /**
   * Called once the target is resolved and its cluster known, before the render: a deploy takes its lock and reads
   * the cluster meanwhile (see deployTarget). The cluster is undefined when rendering offline.
   */
  onTarget?: ((target: ResolvedTarget, cluster: Cluster | undefined) => void) | undefined;
  /**
   * Turns the rendered objects (every item's, in deployment order) into those to apply, one for one and in the same
   * order, without changing its input; applied before the objects are hashed, so the rendered target's objectsHash
   * describes what is applied (an agent's enforceNamespace and diffNormalizers: agent/sync.ts). It may read the live
   * cluster: the render cache keeps the objects before it, and it runs again on a reused render, so no record holds
   * what an earlier transform read.
   */
  transform?: ((objects: readonly KubeObject[]) => Promise<KubeObject[]>) | undefined;
}

export interface PreparedTarget {
  project: KluctlProject;
  /** The target as resolved, args included: they stay in this process, a RenderedTarget never holds them. */
  target: ResolvedTarget;
  rendered: RenderedTarget;
  /** The cluster the render read, bound to the signal; undefined when rendered offline. */
  cluster: Cluster | undefined;
  /** Epoch ms of the earlier render reused instead of rendering (see render-cache.ts); undefined when rendered now. */
  reusedFrom?: number;
}

/**
 * Loads, connects and renders; the scratch folder lives only for this call.
 * @throws Error for an unknown target, a missing kubeconfig context, an unreachable cluster, or any render problem,
 *   with the values of sensitive vars masked; the signal's reason when it fired.
 */
export async function prepareTarget(request: TargetRequest, engine: Engine, options: PrepareOptions): Promise<PreparedTarget> {
  const sensitive = new SensitiveValues();
  const progress = maskedProgress(options.progress, sensitive);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-render-'));
  // Kubeconfigs live apart from the rendered copy, so no template path or kustomization '../' can reach them.
  const credentialsDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-credentials-'));
  try {
    return await prepare(request, engine, { ...options, progress }, sensitive, { workDir, credentialsDir });
  } catch (error) {
    throw sensitive.maskError(error);
  } finally {
    await rm(workDir, { recursive: true, force: true });
    await rm(credentialsDir, { recursive: true, force: true });
  }
}

async function prepare(
  request: TargetRequest,
  engine: Engine,
  options: PrepareOptions,
  sensitive: SensitiveValues,
  { workDir, credentialsDir }: { workDir: string; credentialsDir: string },
): Promise<PreparedTarget> {
  const { kubeConfig, progress, signal } = options;
  const registries = options.registries ?? new RegistryCredentials();
  const project = await loadKluctlProject(request.projectDir);
  const cache = options.renderCache && kubeConfig && (await options.renderCache.lookup(project, request, kubeConfig, engine.tools));
  if (cache?.record && kubeConfig) {
    const sources = { git: engine.git, oci: engine.oci, registries };
    const reused = await reusedRender(cache.record, project, kubeConfig, engine.clusters, sources, signal);
    if (reused) {
      options.onTarget?.(reused.target, reused.cluster);
      progress.step('render', `reusing the render of ${new Date(cache.record.savedAt).toISOString()}: its inputs are unchanged`);
      return await transformed(reused, options.transform);
    }
  }
  progress.step('target', `loading target ${request.target ?? '(no name)'}`);
  const target = await resolveTarget(
    project,
    {
      targetName: request.target,
      externalArgs: request.args,
      contextOverride: request.context,
      defaultContext: kubeConfig?.getCurrentContext(),
      nameOverride: request.targetNameOverride,
      discriminatorOverride: request.discriminator,
      signal,
    },
    engine.renderer,
  );
  const cluster = kubeConfig && engine.clusters.get(kubeConfig, target.context).withSignal(signal);
  options.onTarget?.(target, cluster);
  const [kubeVersion, scope, apiVersions] = cluster
    ? await Promise.all([cluster.version(), cluster.discovery.scopeResolver(), servedApiVersions(cluster)])
    : [OFFLINE_KUBERNETES_VERSION, undefined, []];
  const environment: ProjectEnvironment = {
    renderer: engine.renderer,
    tools: engine.tools,
    cluster,
    git: engine.git,
    oci: engine.oci,
    registries,
    systemEnv: engine.config.systemEnv,
    sopsEnv: options.sopsEnv,
    sensitive,
    inputs: cache?.inputs,
    signal,
  };
  const loaded = await loadDeploymentItems(project.dir, { target: target.templateValue, args: target.args }, environment);
  const helmReads =
    cluster && cache
      ? await startHelmReadsProxy(cluster.client.config, cache.inputs, credentialsDir, await cluster.discovery.resources())
      : undefined;
  const items = await renderProject({
    fixedImages: [...target.images, ...request.fixedImages],
    items: loaded.filter((item) => isSelectedForDeploy(item, request.inclusion)),
    discriminator: target.discriminator,
    renderer: engine.renderer,
    tools: engine.tools,
    scope,
    helm: {
      kubeVersion,
      apiVersions,
      charts: engine.charts,
      kube: cluster && { kubeconfig: await kubeconfigFile(cluster, credentialsDir), context: cluster.context },
      reads: helmReads,
      inputs: cache?.inputs,
    },
    sopsEnv: options.sopsEnv,
    signal,
    workDir,
    onPhase: (phase) => progress.step('render', phase),
  }).finally(() => helmReads?.close());
  const rendered: RenderedTarget = {
    apiVersion: RENDERED_TARGET_API_VERSION,
    kind: 'RenderedTarget',
    target: {
      name: target.name,
      discriminator: target.discriminator,
      ...(target.context === undefined ? {} : { context: target.context }),
    },
    inclusion: request.inclusion,
    cluster: { kubeVersion, apiVersions, offline: !cluster },
    items: items.map(targetItem),
    images: items.flatMap((item) => item.images),
    objectsHash: objectsHash(items.flatMap((item) => item.objects)),
    sensitiveValues: sensitive.list(),
  };
  if (cache && cluster) {
    const record = { key: cache.key, server: cluster.client.server, facts: await clusterFacts(cluster), target, rendered };
    // A render that cannot be kept costs the next run its reuse, never this run its result.
    await options.renderCache?.save(record, cache.inputs).catch(() => undefined);
  }
  return await transformed({ project, target, rendered, cluster }, options.transform);
}

/**
 * `prepared` with its objects turned by `transform` (see PrepareOptions.transform) and hashed again.
 * @throws Error when the transform does not return one object for each.
 */
async function transformed(prepared: PreparedTarget, transform: PrepareOptions['transform']): Promise<PreparedTarget> {
  if (!transform) return prepared;
  const { rendered } = prepared;
  const before = targetObjects(rendered);
  const objects = await transform(before);
  if (objects.length !== before.length) throw new Error(`the transform returned ${objects.length} objects for ${before.length}`);
  let next = 0;
  const items = rendered.items.map((item) => ({ ...item, objects: item.objects.map(() => objects[next++]!) }));
  return { ...prepared, rendered: { ...rendered, items, objectsHash: objectsHash(objects) } };
}

/** The cluster a target was (or is being) rendered against. @throws Error when it is rendered offline. */
export function requireCluster(prepared: { cluster?: Cluster | undefined }): Cluster {
  if (!prepared.cluster) throw new Error('this command needs a cluster');
  return prepared.cluster;
}

/** The earlier render `record`, when it still holds on its cluster (see render-cache.ts). */
async function reusedRender(
  record: RenderRecord,
  project: KluctlProject,
  kubeConfig: KubeConfig,
  clusters: ClusterPool,
  sources: RenderSources,
  signal: AbortSignal | undefined,
): Promise<PreparedTarget | undefined> {
  const cluster = clusters.get(kubeConfig, record.target.context).withSignal(signal);
  return (await stillHolds(record, cluster, sources, signal))
    ? { project, target: record.target, rendered: record.rendered, cluster, reusedFrom: record.savedAt }
    : undefined;
}

/** What applying needs of a rendered item: no paths beyond its folder's name, no vars. */
function targetItem({ item, objects }: RenderedItem): TargetItem {
  return {
    ...(item.relDir === undefined ? {} : { dir: item.relDir }),
    barrier: item.barrier,
    ...(item.message === undefined ? {} : { message: item.message }),
    waitReadiness: item.waitReadiness,
    deleteObjects: item.deleteObjects,
    waitReadinessObjects: item.waitReadinessObjects,
    conflictResolution: item.conflictResolution,
    ignoreForDiff: item.ignoreForDiff,
    objects,
  };
}

/** Helm reads the cluster (for `lookup`) from a kubeconfig file: the cluster's, written into the private `dir`. */
async function kubeconfigFile(cluster: Cluster, dir: string): Promise<string> {
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, cluster.client.config.exportConfig(), { mode: 0o600 });
  return file;
}

/** Items outside the selection are skipped, except those Kluctl always deploys (barriers, alwaysDeploy, onlyRender). */
function isSelectedForDeploy(item: DeploymentItem, inclusion: Inclusion): boolean {
  return item.barrier || item.alwaysDeploy || item.onlyRender || isIncluded({ tags: item.tags, dir: item.relDir }, inclusion);
}

/** `group/version` and `group/version/Kind` of everything served, as Helm's Capabilities.APIVersions lists them. */
async function servedApiVersions(cluster: Cluster): Promise<string[]> {
  const versions = new Set<string>();
  for (const resource of await cluster.discovery.resources()) {
    const groupVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    versions.add(groupVersion);
    versions.add(`${groupVersion}/${resource.kind}`);
  }
  return [...versions].sort();
}
