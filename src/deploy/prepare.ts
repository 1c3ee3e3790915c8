/**
 * The first half of every command: choose the target, connect to its cluster, load the deployment tree and render
 * it completely. Nothing here changes the cluster; a command only applies or deletes after this returned.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import os from 'node:os';
import path from 'node:path';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import { parseArgs } from '../project/args.ts';
import { loadDeploymentItems, type DeploymentItem } from '../project/deployment-project.ts';
import { isIncluded, NO_SELECTION, type Inclusion } from '../project/inclusion.ts';
import { loadKluctlProject, resolveTarget, type KluctlProject, type ResolvedTarget } from '../project/kluctl-project.ts';
import { renderProject, type RenderedItem } from '../render/render-project.ts';
import { readFixedImages, type FixedImage, type SeenImage } from '../render/images.ts';
import { deepMerge } from '../project/values.ts';
import type { SopsEnv } from '../sops/decrypt.ts';
import { JinjaPool } from '../template/jinja-pool.ts';
import { GitCache } from '../source/git-cache.ts';
import type { Progress } from '../progress.ts';

/** Kubernetes version charts are rendered for when no cluster is connected. */
export const OFFLINE_KUBERNETES_VERSION = 'v1.35.0';

export interface TargetOptions {
  projectDir: string;
  target: string | undefined;
  /** `name=value` strings from `-a`. */
  args: readonly string[];
  kubeconfig: string | undefined;
  /** Overrides the target's context. */
  context: string | undefined;
  /** Render without a cluster (built-in kind scopes, default Kubernetes version). */
  offline: boolean;
  /** YAML files of args (`--args-from-file`), loaded before `args`. */
  argsFiles?: readonly string[];
  /** `-T`: the target's name as templates see it. */
  targetNameOverride?: string | undefined;
  /** `--discriminator`: overrides the project's and target's discriminator. */
  discriminator?: string | undefined;
  /** Tag and folder selection; items outside it are neither rendered nor deployed. */
  inclusion?: Inclusion;
  /** `-F image<:namespace:deployment:container>=result` arguments. */
  fixedImages?: readonly string[];
  /** YAML files with a list `images` of fixed images (`--fixed-images-file`). */
  fixedImagesFiles?: readonly string[];
  /** Fixed images given as data (the controller's spec.images), after those of the command line. */
  extraFixedImages?: readonly FixedImage[];
  /** Args given as data (the controller's spec.args), under those of `args`. */
  argValues?: Record<string, unknown>;
  /** A loaded kubeconfig instead of `kubeconfig` (the controller builds its own). */
  kubeConfig?: KubeConfig;
}

/** What long-running callers (the controller) share between runs; each is created per run when missing. */
export interface TargetRuntime {
  renderer?: JinjaPool;
  git?: GitCache;
  /** Keys for SOPS-encrypted files, beyond the process environment. */
  sopsEnv?: SopsEnv;
}

export interface PreparedTarget {
  project: KluctlProject;
  target: ResolvedTarget;
  /** Undefined when offline. */
  cluster: Cluster | undefined;
  items: RenderedItem[];
  /** All objects of all items, in deployment order. */
  objects: KubeObject[];
  inclusion: Inclusion;
  /** Images resolved through `images.get_image`, in deployment order. */
  images: SeenImage[];
}

/**
 * Loads, connects and renders. The scratch folder (and a Jinja2 pool the runtime does not provide) live only for
 * this call.
 * @throws Error for an unknown target, missing kubeconfig context, unreachable cluster, or any render problem.
 */
export async function prepareTarget(options: TargetOptions, progress: Progress, runtime: TargetRuntime = {}): Promise<PreparedTarget> {
  const project = await loadKluctlProject(options.projectDir);
  const renderer = runtime.renderer ?? new JinjaPool();
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-render-'));
  try {
    const kubeConfig = options.offline ? undefined : (options.kubeConfig ?? loadKubeConfig({ kubeconfig: options.kubeconfig }));
    progress.step('target', `loading target ${options.target ?? '(no name)'}`);
    const target = await resolveTarget(
      project,
      {
        targetName: options.target,
        externalArgs: deepMerge(options.argValues ?? {}, await parseArgs(options.args, options.argsFiles)),
        contextOverride: options.context,
        defaultContext: kubeConfig?.getCurrentContext(),
        nameOverride: options.targetNameOverride,
        discriminatorOverride: options.discriminator,
      },
      renderer,
    );
    const cluster = kubeConfig && new Cluster(new KubeClient(withContext(kubeConfig, target.context)));
    const [kubeVersion, scope, apiVersions] = cluster
      ? await Promise.all([cluster.version(), cluster.discovery.scopeResolver(), servedApiVersions(cluster)])
      : [OFFLINE_KUBERNETES_VERSION, undefined, []];
    const environment = { renderer, cluster, git: runtime.git ?? new GitCache(), sopsEnv: runtime.sopsEnv };
    const inclusion = options.inclusion ?? NO_SELECTION;
    const deploymentItems = (
      await loadDeploymentItems(project.dir, { target: target.templateValue, args: target.args }, environment)
    ).filter((item) => isSelectedForDeploy(item, inclusion));
    const fixedImages = [
      ...target.images,
      ...(await readFixedImages(options.fixedImagesFiles ?? [], options.fixedImages ?? [])),
      ...(options.extraFixedImages ?? []),
    ];
    const items = await renderProject({
      fixedImages,
      items: deploymentItems,
      discriminator: target.discriminator,
      renderer,
      scope,
      helm: {
        kubeVersion,
        apiVersions,
        git: environment.git,
        kube: cluster && { kubeconfig: await kubeconfigFile(kubeConfig, options, workDir), context: cluster.context },
      },
      sopsEnv: runtime.sopsEnv,
      workDir,
      onPhase: (phase) => progress.step('render', phase),
    });
    return {
      project,
      target,
      cluster,
      items,
      objects: items.flatMap((item) => item.objects),
      inclusion,
      images: items.flatMap((item) => item.images),
    };
  } finally {
    if (!runtime.renderer) await renderer.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

/** A copy of `config` using `context`, or an error naming the contexts it has. */
function withContext(config: KubeConfig, context: string | undefined): KubeConfig {
  if (!context || context === config.getCurrentContext()) return config;
  if (!config.getContextObject(context)) {
    throw new Error(
      `context '${context}' not found in kubeconfig (known contexts: ${
        config
          .getContexts()
          .map((entry) => entry.name)
          .join(', ') || 'none'
      })`,
    );
  }
  const copy = new KubeConfig();
  copy.loadFromString(config.exportConfig());
  copy.setCurrentContext(context);
  return copy;
}

/** Helm reads the cluster (for `lookup`) from a kubeconfig file; an in-memory kubeconfig is written into the scratch folder. */
async function kubeconfigFile(config: KubeConfig | undefined, options: TargetOptions, workDir: string): Promise<string | undefined> {
  if (!options.kubeConfig || !config) return options.kubeconfig;
  const file = path.join(workDir, 'kubeconfig');
  await writeFile(file, config.exportConfig(), { mode: 0o600 });
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
