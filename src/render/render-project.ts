/**
 * Renders every deployment item of a project into Kubernetes objects, in kluctl's phases: template all items,
 * then render their Helm charts, then build their kustomizations, then add Kluctl's metadata and settle
 * namespaces; an object rendered by two items is an error. Each phase runs items in parallel and collects every
 * failure, so one run reports all problems; a failure anywhere means no objects at all (nothing may be applied after
 * a render error).
 */
import os from 'node:os';
import path from 'node:path';
import pLimit from 'p-limit';
import type { DeploymentItem } from '../project/deployment-project.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';
import type { KubeObject } from '../kube/object.ts';
import { withCrdScopes, type ScopeResolver } from '../kube/scope.ts';
import { renderedItemDir, renderedSourceRoot, sourceName, templateItem } from './template-item.ts';
import { renderHelmChart, type HelmEnvironment } from './helm.ts';
import { buildKustomization } from './kustomize.ts';
import { RenderedFiles } from './rendered-files.ts';
import { addKluctlMetadata, settleNamespaces } from './postprocess.ts';
import { duplicateObjectProblems } from './duplicates.ts';
import { resolveImages, type SeenImage } from './images.ts';
import type { FixedImage } from '../project/fixed-images.ts';
import { ProblemList, problemsOf } from '../problems.ts';
import type { SopsEnv } from '../sops/decrypt.ts';
import type { Tools } from '../tools.ts';

export interface RenderRequest {
  items: readonly DeploymentItem[];
  discriminator: string;
  renderer: JinjaPool;
  /**
   * Scope of kinds, from discovery. Without a cluster it is undefined and namespaces are left as rendered, as
   * Kluctl leaves them (it only settles namespaces when it can ask the API server).
   */
  scope: ScopeResolver | undefined;
  helm: Omit<HelmEnvironment, 'helmHome'>;
  /** Empty scratch folder the rendered files are written to; the caller removes it. */
  workDir: string;
  /** Fixed images from the target and the command line, in order (later entries win). */
  fixedImages: readonly FixedImage[];
  /** Runs sops and kustomize. */
  tools: Tools;
  /** Keys for sops-encrypted manifests and helm values, beyond the engine's child environment. */
  sopsEnv?: SopsEnv | undefined;
  signal?: AbortSignal | undefined;
  /** Called as each phase starts, for progress output. */
  onPhase?: (phase: string) => void;
}

export interface RenderedItem {
  item: DeploymentItem;
  /** Objects of the item in kustomize's output order; empty for barriers and onlyRender items. */
  objects: KubeObject[];
  /** The images `images.get_image` resolved in this item. */
  images: SeenImage[];
}

/** Every problem of a failed render, each naming the file or item. */
export class RenderError extends ProblemList {
  constructor(problems: string[]) {
    super(problems);
    this.name = 'RenderError';
  }
}

/**
 * Renders `request.items`; the result keeps the items' order.
 * @throws RenderError listing every failing item.
 */
export async function renderProject(request: RenderRequest): Promise<RenderedItem[]> {
  const limit = pLimit(Math.max(2, os.availableParallelism() * 2));
  const renderRoot = path.join(request.workDir, 'rendered');
  const pathItems = request.items.filter((item) => item.dir !== undefined);

  request.onPhase?.('Rendering templates');
  const { renderer, tools, sopsEnv, signal } = request;
  const files = new RenderedFiles();
  const renderedDirs = await eachItem(
    pathItems,
    (item) => limit(() => templateItem(item, renderRoot, files, { renderer, tools, sopsEnv, signal })),
    signal,
    renderRoot,
  );

  request.onPhase?.('Rendering Helm charts');
  const helm = { ...request.helm, helmHome: path.join(request.workDir, 'helm'), signal };
  await eachItem(
    pathItems,
    (item, index) => limit(() => renderItemCharts(renderedDirs[index] as string, item, files, helm)),
    signal,
    renderRoot,
  );

  request.onPhase?.('Building kustomize objects');
  const built = await eachItem(
    pathItems,
    (item, index) =>
      item.onlyRender
        ? Promise.resolve([])
        : limit(async () => {
            const root = { dir: renderedSourceRoot(renderRoot, item), name: sourceName(item) };
            const options = { overrideNamespace: item.overrideNamespace, recursive: item.recursive, files, tools, root, signal };
            return (await buildKustomization(renderedDirs[index] as string, options)).objects;
          }),
    signal,
    renderRoot,
  );

  request.onPhase?.('Postprocessing objects');
  const objectsByItem = new Map(
    pathItems.map((item, index) => [item, addKluctlMetadata(built[index] as KubeObject[], item, request.discriminator)]),
  );
  if (request.scope) {
    const scope = withCrdScopes([...objectsByItem.values()].flat(), request.scope);
    for (const objects of objectsByItem.values()) settleNamespaces(objects, scope);
  }
  // After the namespaces are settled: an object without one in one item and with it in another is the same object.
  const duplicates = duplicateObjectProblems(pathItems.map((item) => ({ item, objects: objectsByItem.get(item) ?? [] })));
  if (duplicates.length > 0) throw new RenderError(duplicates);
  const images = await eachItem(
    pathItems,
    async (item) =>
      (objectsByItem.get(item) ?? []).flatMap((object) =>
        resolveImages(object, request.fixedImages, item.context, { tags: item.tags, dir: item.relDir ?? '' }),
      ),
    signal,
  );
  const imagesByItem = new Map(pathItems.map((item, index) => [item, images[index] as SeenImage[]]));
  return request.items.map((item) => ({ item, objects: objectsByItem.get(item) ?? [], images: imagesByItem.get(item) ?? [] }));
}

/**
 * Runs `work` for every item, then throws one RenderError naming each item that failed (or the signal's reason when
 * the render was abandoned: its failures are the abort's, not the project's).
 */
async function eachItem<T>(
  items: readonly DeploymentItem[],
  work: (item: DeploymentItem, index: number) => Promise<T>,
  signal: AbortSignal | undefined,
  renderRoot?: string,
): Promise<T[]> {
  const results = await Promise.allSettled(items.map(work));
  signal?.throwIfAborted();
  const problems = results.flatMap((result, index) => {
    if (result.status === 'fulfilled') return [];
    const item = items[index] as DeploymentItem;
    const shown = (problem: string) => (renderRoot === undefined ? problem : projectPaths(problem, item, renderRoot));
    return problemsOf(result.reason).map((problem) => describeFailure(item, shown(problem)));
  });
  if (problems.length > 0) throw new RenderError(problems);
  return results.map((result) => (result as PromiseFulfilledResult<T>).value);
}

/**
 * The problem with the render's temporary copy of the item's folder (YAML parsed after templating, kustomize's own
 * errors) named as the user knows it: relative to the project, or `<source>/…` for a git include.
 */
function projectPaths(problem: string, item: DeploymentItem, renderRoot: string): string {
  if (item.relDir === undefined) return problem;
  const shownDir = path.posix.join(item.source.id, item.relDir);
  return problem
    .replaceAll(`${renderedItemDir(renderRoot, item)}/`, shownDir === '.' ? '' : `${shownDir}/`)
    .replaceAll(renderedItemDir(renderRoot, item), shownDir);
}

/** Prefixes the item's folder unless the problem already names a file of it (or an absolute path). */
function describeFailure(item: DeploymentItem, problem: string): string {
  return problem.includes(item.relDir ?? '\0') || path.isAbsolute(problem.split(':')[0] ?? '') ? problem : `${item.relDir}: ${problem}`;
}

/** Renders the item's charts, one after another, with the item's folder written to disk for helm. */
async function renderItemCharts(renderedDir: string, item: DeploymentItem, files: RenderedFiles, helm: HelmEnvironment): Promise<void> {
  const charts = (await files.list(renderedDir, true)).filter((file) => /^helm-chart\.ya?ml$/i.test(path.posix.basename(file)));
  if (charts.length > 0) await files.write(renderedDir);
  for (const chart of charts) {
    const subDir = path.dirname(chart);
    const output = await renderHelmChart(path.join(renderedDir, chart), path.join(item.dir as string, subDir), item.source.root, helm);
    files.fromDisk(output.file, output.objects);
  }
}
