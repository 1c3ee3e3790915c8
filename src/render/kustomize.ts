/**
 * Step 3 of rendering an item: turn its rendered folder into objects with kustomize, as kluctl's kustomize docs
 * define it. A folder without kustomization.yaml gets one listing every *.yml/*.yaml in it (helm-values skipped,
 * a helm-chart.yaml replaced by its output file); overrideNamespace becomes the kustomization's `namespace` when
 * it has none.
 *
 * Most kustomizations in Kluctl projects only list resource files, so those are built natively (parse, set the
 * namespace, order as kustomize does); anything else (bases, patches, generators, transformers, namespaced
 * bindings and webhooks whose references kustomize also rewrites) goes to the kustomize binary, the reference.
 * Either way, every local path the kustomization (and each one it reaches) names must stay inside the options' root
 * (assertKustomizationInside), as the binary runs with LoadRestrictionsNone, as Kluctl runs it.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Tools } from '../tools.ts';
import { parseYaml, parseYamlDocuments, toYaml } from '../yaml.ts';
import { RenderedFiles } from './rendered-files.ts';
import { isPlainObject, type Values } from '../values.ts';
import { splitApiVersion, type KubeObject } from '../kube/object.ts';
import { DEFAULT_HELM_OUTPUT, readHelmChartConfig } from './helm.ts';
import { isKnownClusterScoped } from '../kube/scope.ts';
import { assertKustomizationInside, type KustomizeRoot } from './kustomize-paths.ts';

export interface KustomizeResult {
  objects: KubeObject[];
  /** True when the kustomize binary built the objects (false: native fast path). */
  usedBinary: boolean;
}

export interface KustomizeOptions {
  /** Becomes the kustomization's `namespace` when it has none (Kluctl's overrideNamespace). */
  overrideNamespace?: string | undefined;
  /** Generate the kustomization from the subfolders' files too. */
  recursive?: boolean;
  /** The render folder's files; default: what is on disk. Written to disk before the kustomize binary runs. */
  files?: RenderedFiles | undefined;
  /** Runs the kustomize binary when the native path cannot build the kustomization. */
  tools: Tools;
  /**
   * No path a kustomization names may lead outside it (the rendered copy of the project or source); default: the
   * rendered folder itself, named by its folder name.
   */
  root?: KustomizeRoot | undefined;
  signal?: AbortSignal;
}

/**
 * Builds the kustomization in `renderedDir` (generating it first when missing).
 * @throws Error naming the folder when a helm chart's output is not listed, a resource is invalid, or kustomize fails;
 *   PathEscapeError naming the kustomization file, the field and the path when a path leads outside the root.
 */
export async function buildKustomization(renderedDir: string, options: KustomizeOptions): Promise<KustomizeResult> {
  const { overrideNamespace, recursive = false, files = new RenderedFiles() } = options;
  const existing = await files.find(renderedDir, 'kustomization');
  if (existing && recursive) throw new Error(`${existing}: 'recursive: true' cannot be used with a kustomization.yaml`);
  const kustomization = existing ? await readKustomization(existing, files) : await generateKustomization(renderedDir, recursive, files);
  if (existing) await checkHelmOutputsListed(renderedDir, kustomization, existing, files);
  if (overrideNamespace !== undefined && kustomization['namespace'] === undefined) kustomization['namespace'] = overrideNamespace;
  const root = options.root ?? { dir: renderedDir, name: path.basename(renderedDir) };
  const file = existing ?? path.join(renderedDir, 'kustomization.yaml');
  await assertKustomizationInside(renderedDir, kustomization, file, root, files);
  const native = await buildNatively(renderedDir, kustomization, files);
  if (native) return { objects: native, usedBinary: false };
  // The binary reads the folder itself, and may follow references into other items' folders.
  await files.write();
  await mkdir(renderedDir, { recursive: true });
  await writeFile(file, toYaml(kustomization));
  return { objects: await buildWithBinary(renderedDir, options.tools, options.signal), usedBinary: true };
}

async function readKustomization(file: string, files: RenderedFiles): Promise<Values> {
  const value = parseYaml((await files.read(file)) ?? '', file) ?? {};
  if (!isPlainObject(value)) throw new Error(`${file}: a kustomization must be a YAML mapping`);
  return value;
}

/**
 * Every YAML file of the folder (and, with `recursive`, of its subfolders), as kluctl's generated kustomization
 * lists them: helm-values files skipped, a helm-chart file replaced by the chart's output file.
 */
async function generateKustomization(dir: string, recursive: boolean, files: RenderedFiles): Promise<Values> {
  const resources: string[] = [];
  for (const file of await files.list(dir, recursive)) {
    const name = path.posix.basename(file);
    if (recursive && file.includes('/') && /^kustomization\.ya?ml$/.test(name)) {
      throw new Error(`${dir}: 'recursive: true' cannot be used when ${file} exists`);
    }
    if (/^helm-values\.ya?ml$/i.test(name)) continue;
    const output = /^helm-chart\.ya?ml$/i.test(name)
      ? ((await readHelmChartConfig(path.join(dir, file))).output ?? DEFAULT_HELM_OUTPUT) // on disk: written for helm
      : undefined;
    const resource = output ? path.posix.join(path.posix.dirname(file), output) : /\.ya?ml$/i.test(name) ? file : undefined;
    if (resource && !resources.includes(resource)) resources.push(resource);
  }
  return { resources };
}

async function checkHelmOutputsListed(dir: string, kustomization: Values, file: string, files: RenderedFiles): Promise<void> {
  const chart = await files.find(dir, 'helm-chart');
  if (!chart) return;
  const output = (await readHelmChartConfig(chart)).output ?? DEFAULT_HELM_OUTPUT;
  const resources = Array.isArray(kustomization['resources']) ? kustomization['resources'] : [];
  if (!resources.includes(output)) throw new Error(`${file} does not list the rendered helm chart output '${output}' in its resources`);
}

const NATIVE_KEYS = new Set(['apiVersion', 'kind', 'resources', 'namespace']);
/** Kinds whose references to other namespaces kustomize's namespace transformer also rewrites. */
const NAMESPACE_REFERENCING_KINDS = new Set([
  'RoleBinding',
  'ClusterRoleBinding',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'APIService',
  'CustomResourceDefinition',
]);

/**
 * Returns the objects when the kustomization is a plain list of resource files, else undefined.
 * @param files where the resources are read; default: from disk.
 */
export async function buildNatively(
  dir: string,
  kustomization: Values,
  files: RenderedFiles = new RenderedFiles(),
): Promise<KubeObject[] | undefined> {
  if (!Object.keys(kustomization).every((key) => NATIVE_KEYS.has(key))) return undefined;
  const resources = kustomization['resources'] ?? [];
  const namespace = kustomization['namespace'];
  if (!Array.isArray(resources) || (namespace !== undefined && typeof namespace !== 'string')) return undefined;
  const documents: unknown[] = [];
  for (const resource of resources) {
    if (typeof resource !== 'string') return undefined;
    const parsed = await files.readDocuments(path.resolve(dir, resource));
    if (parsed === undefined) return undefined;
    documents.push(...expandLists(parsed));
  }
  if (!documents.every(isCompleteObject)) return undefined;
  const objects = documents;
  if (hasDuplicateIds(objects)) return undefined;
  if (namespace !== undefined && !setNamespaceLikeKustomize(objects, namespace)) return undefined;
  return sortLikeKustomize(objects);
}

/**
 * kustomize's namespace transformer: namespaced objects move into `namespace`, and a Namespace object is renamed
 * to it. Returns false (leave it to the binary) where kustomize does more: several Namespaces (an ID conflict it
 * reports) or kinds whose references to namespaces it also rewrites.
 */
function setNamespaceLikeKustomize(objects: KubeObject[], namespace: string): boolean {
  if (objects.some((object) => NAMESPACE_REFERENCING_KINDS.has(object.kind))) return false;
  const namespaces = objects.filter((object) => object.kind === 'Namespace' && object.apiVersion === 'v1');
  if (namespaces.length > 1) return false;
  for (const object of objects) {
    if (namespaces.includes(object)) object.metadata.name = namespace;
    else if (!isKnownClusterScoped(object)) object.metadata.namespace = namespace;
  }
  return true;
}

function expandLists(documents: unknown[]): unknown[] {
  return documents.flatMap((document) =>
    isPlainObject(document) && typeof document['kind'] === 'string' && document['kind'].endsWith('List') && Array.isArray(document['items'])
      ? document['items']
      : [document],
  );
}

function isCompleteObject(value: unknown): value is KubeObject {
  if (!isPlainObject(value) || typeof value['apiVersion'] !== 'string' || typeof value['kind'] !== 'string') return false;
  const metadata = value['metadata'];
  return isPlainObject(metadata) && typeof metadata['name'] === 'string' && metadata['name'] !== '';
}

function hasDuplicateIds(objects: readonly KubeObject[]): boolean {
  const ids = objects.map((object) => `${object.apiVersion}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`);
  return new Set(ids).size !== ids.length;
}

/**
 * kustomize's legacy output order (the default of `kustomize build`): these kinds first, in this order; webhook
 * configurations last; within a rank by group, version and kind (kustomize writes the core group as `~G`, so it
 * sorts after named groups), then by namespace (empty counts as `default`) and name.
 */
const ORDER_FIRST = [
  'Namespace',
  'ResourceQuota',
  'StorageClass',
  'CustomResourceDefinition',
  'ServiceAccount',
  'PodSecurityPolicy',
  'Role',
  'ClusterRole',
  'RoleBinding',
  'ClusterRoleBinding',
  'ConfigMap',
  'Secret',
  'Endpoints',
  'Service',
  'LimitRange',
  'PriorityClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'Deployment',
  'StatefulSet',
  'CronJob',
  'PodDisruptionBudget',
];
const ORDER_LAST = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];

function sortLikeKustomize(objects: KubeObject[]): KubeObject[] {
  const rank = (kind: string): number => {
    const first = ORDER_FIRST.indexOf(kind);
    if (first >= 0) return first - ORDER_FIRST.length;
    const last = ORDER_LAST.indexOf(kind);
    return last >= 0 ? 1 + last : 0;
  };
  const gvk = (object: KubeObject): string => {
    const { group, version } = splitApiVersion(object.apiVersion);
    return `${group || '~G'}_${version || '~V'}_${object.kind || '~K'}`;
  };
  const id = (object: KubeObject): string => `${object.metadata.namespace || 'default'}|${object.metadata.name}`;
  return [...objects].sort((a, b) => rank(a.kind) - rank(b.kind) || compare(gvk(a), gvk(b)) || compare(id(a), id(b)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Runs `kustomize build`; exported so tests can hold the native path to the binary's output. */
export async function buildWithBinary(dir: string, tools: Tools, signal?: AbortSignal): Promise<KubeObject[]> {
  const { stdout } = await tools
    .run('kustomize', ['build', '--load-restrictor', 'LoadRestrictionsNone', dir], { signal })
    .catch((error: Error) => {
      if (signal?.aborted) throw error;
      throw new Error(`kustomize build of ${dir} failed: ${error.message}`);
    });
  return parseYamlDocuments(stdout, `${dir} (kustomize output)`) as KubeObject[];
}
