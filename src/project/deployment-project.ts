/**
 * Loads the deployment.yaml tree of a Kluctl project into a flat, ordered list of deployment items, as kluctl's
 * deployment-yml, tags, templating and kluctl-libraries docs define it:
 * - each deployment.yaml is rendered by Jinja2 with the vars of its parent before it is parsed, then its own
 *   `vars` are loaded for its items and includes;
 * - `when` skips an item (or, on an included project, the whole project);
 * - tags are inherited (parent include's tags, then the project's) and an item without tags gets the base name of
 *   its path as its tag; commonLabels/commonAnnotations merge root to leaf (child wins); the nearest
 *   overrideNamespace wins;
 * - `include`, `git` and `oci` bring in other projects; a git or OCI project is a source of its own (its own root, and
 *   it cannot load templates of the project including it); a project with `.kluctl-library.yaml` is a library: it sees
 *   only the args its include passes (plus every var with `passVars`), with its own defaults;
 * - a root folder without deployment.yaml is one item `path: .`.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseYaml } from '../yaml.ts';
import { validate } from '../validate.ts';
import {
  DeploymentProjectSchema,
  KluctlLibrarySchema,
  type ConflictResolutionConfig,
  type DeploymentItemConfig,
  type DeploymentProjectConfig,
  type IgnoreForDiffConfig,
  type GitInclude,
  type OciInclude,
  type ObjectSelector,
} from './schema.ts';
import { evaluateCondition, type StringScope } from './render-values.ts';
import type { ProjectEnvironment } from './environment.ts';
import { withDefaultArgs } from './kluctl-project.ts';
import { isPlainObject, type Values } from '../values.ts';
import { loadVars } from './vars.ts';
import { findProjectFile, isDirectory, relativeSlashPath, resolveInside } from '../files.ts';
import type { Checkout, GitRef } from '../source/git-cache.ts';

/** Where an item's files come from: the project itself (id '') or a git or OCI include (its own checkout or artifact). */
export interface ItemSource {
  /** Absolute root folder of the source; item folders and templates stay inside it. */
  root: string;
  /** '' for the project, a short stable name for a git or OCI source. */
  id: string;
}

/** One entry of the flattened deployment list. */
export interface DeploymentItem {
  source: ItemSource;
  /** Absolute folder of a `path` item; undefined for barriers, deleteObjects and waitReadinessObjects items. */
  dir: string | undefined;
  /** `dir` relative to its source root with forward slashes (Kluctl's kluctl.io/deployment-item-dir). */
  relDir: string | undefined;
  /** 0 for the first item using a folder, then 1, 2, … (each use is rendered separately). */
  index: number;
  /** Everything listed before this item must be applied before anything after it. */
  barrier: boolean;
  message: string | undefined;
  waitReadiness: boolean;
  onlyRender: boolean;
  alwaysDeploy: boolean;
  skipDeleteIfTags: boolean;
  /** Generate the kustomization from every YAML file below the folder, not just the folder itself. */
  recursive: boolean;
  /** Objects this item deletes when it runs. */
  deleteObjects: ObjectSelector[];
  /** Objects (not necessarily Gantry's) this item waits for. */
  waitReadinessObjects: ObjectSelector[];
  tags: string[];
  /** Templating context of the item: target, args and every var visible to it. */
  context: Values;
  /** Include/import search folders, nearest first: the item folder, its project folder, parent project folders. */
  searchDirs: string[];
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  overrideNamespace: string | undefined;
  /** conflictResolution rules of this project and every project above it. */
  conflictResolution: ConflictResolutionConfig[];
  /** ignoreForDiff rules of this project and every project above it. */
  ignoreForDiff: IgnoreForDiffConfig[];
  /** The deployment.yaml declaring the item (for messages). */
  declaredIn: string;
}

interface ProjectNode {
  dir: string;
  source: ItemSource;
  file: string;
  config: DeploymentProjectConfig;
  context: Values;
  parent: { node: ProjectNode; include: DeploymentItemConfig } | undefined;
}

interface LoadState {
  environment: ProjectEnvironment;
  dirUses: Map<string, number>;
}

/**
 * Loads the tree below `rootDir` with the root templating context (target, args).
 * @throws Error naming the deployment.yaml (and item) for template errors, invalid YAML, unknown keys,
 * missing folders, paths outside the project, unknown git repositories or refs, OCI artifacts that cannot be pulled
 * (naming the registry URL, never a credential), includes nested too deep (a
 * project including itself).
 */
export async function loadDeploymentItems(
  rootDir: string,
  rootContext: Values,
  environment: ProjectEnvironment,
): Promise<DeploymentItem[]> {
  const state: LoadState = { environment, dirUses: new Map() };
  const root = path.resolve(rootDir);
  const node = await loadProjectNode(root, { root, id: '' }, rootContext, undefined, state);
  return node ? collectItems(node, state) : [];
}

async function loadProjectNode(
  dir: string,
  source: ItemSource,
  context: Values,
  parent: ProjectNode['parent'],
  state: LoadState,
): Promise<ProjectNode | undefined> {
  const file = await findProjectFile(dir, 'deployment');
  const label = file ?? path.join(dir, 'deployment.yaml');
  const partial = { dir, source, parent };
  const config = file
    ? await readProjectConfig(file, projectSearchDirs(partial), source, context, state)
    : await implicitConfig(dir, parent, source);
  if (!parent && config.when !== undefined) throw new Error(`${label}: the root deployment project can not contain 'when'`);
  const node: ProjectNode = { ...partial, file: label, config, context };
  node.context = await loadVars(config.vars, context, varsScope(node, projectSearchDirs(node), label, state));
  if (!(await evaluateCondition(config.when, conditionScope(node, state), state.environment.renderer))) return undefined;
  return node;
}

async function readProjectConfig(
  file: string,
  searchDirs: readonly string[],
  source: ItemSource,
  context: Values,
  state: LoadState,
): Promise<DeploymentProjectConfig> {
  const [rendered] = await state.environment.renderer.renderFiles({
    rootDir: source.root,
    files: [relativeSlashPath(source.root, file)],
    context,
    searchDirs: searchDirs.map((dir) => relativeSlashPath(source.root, dir)),
    signal: state.environment.signal,
  });
  if (!rendered || 'error' in rendered) throw rendered?.error ?? new Error(`${file}: not rendered`);
  const config = validate(DeploymentProjectSchema, parseYaml(rendered.text, file) ?? {}, file);
  for (const item of config.deployments ?? []) if (!item.tags) item.tags = defaultTags(item);
  return config;
}

/** Without deployment.yaml, only the root of a source is allowed, as one `path: .` item. */
async function implicitConfig(dir: string, parent: ProjectNode['parent'], source: ItemSource): Promise<DeploymentProjectConfig> {
  if (!parent || dir === source.root) return { deployments: [{ path: '.', tags: [] }] };
  const entries = await readdir(dir).catch(() => [] as string[]);
  const relative = relativeSlashPath(source.root, dir);
  if (entries.some((entry) => /^kustomization\.ya?ml$/.test(entry))) {
    throw new Error(`${relative}: included folder has a kustomization.yaml but no deployment.yaml (use 'path:' instead of 'include:')`);
  }
  throw new Error(`${relative}/deployment.yaml not found`);
}

function defaultTags(item: DeploymentItemConfig): string[] {
  const source = item.path ?? item.include;
  if (source === undefined) return [];
  const base = path.posix.basename(source.replace(/\/+$/, ''));
  return base && base !== '.' && base !== '..' ? [base] : [];
}

async function collectItems(node: ProjectNode, state: LoadState): Promise<DeploymentItem[]> {
  const items: DeploymentItem[] = [];
  for (const [index, config] of (node.config.deployments ?? []).entries()) {
    const label = `${node.file}: deployments[${index}]`;
    if (!(await evaluateCondition(config.when, conditionScope(node, state), state.environment.renderer))) continue;
    if (config.include !== undefined || config.git !== undefined || config.oci !== undefined) {
      items.push(...(await collectInclude(node, config, label, state)));
      if (config.barrier) items.push(actionItem(node, { barrier: true, message: config.message }));
    } else if (config.path !== undefined) {
      items.push(await pathItem(node, config, label, state));
    } else if (config.barrier || config.deleteObjects || config.waitReadinessObjects) {
      items.push(actionItem(node, config));
    } else {
      throw new Error(
        `${label}: an item needs one of 'path', 'include', 'git', 'oci', 'barrier', 'deleteObjects' or 'waitReadinessObjects'`,
      );
    }
  }
  return items;
}

/**
 * How deep includes may nest. A project that includes itself (`include: .`, `include: ''`) or an ancestor would
 * otherwise load forever; a finite recursion that templates end with `when` stays possible below this depth.
 */
const MAX_INCLUDE_DEPTH = 32;

async function collectInclude(node: ProjectNode, config: DeploymentItemConfig, label: string, state: LoadState): Promise<DeploymentItem[]> {
  let depth = 0;
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) depth++;
  if (depth >= MAX_INCLUDE_DEPTH) {
    const what = config.include !== undefined ? `'${config.include}'` : config.git !== undefined ? 'the git include' : 'the OCI include';
    throw new Error(`${label}: includes nest more than ${MAX_INCLUDE_DEPTH} deep (does ${what} include a project that includes it?)`);
  }
  const { dir, source } =
    config.git !== undefined
      ? await checkoutGitInclude(config.git, label, state)
      : config.oci !== undefined
        ? await pullOciInclude(config.oci, label, state)
        : { dir: await resolveFolder(node, config.include as string, label), source: node.source };
  const base = await includeContext(node, config, dir, label);
  const context = await loadVars(config.vars, base, varsScope(node, projectSearchDirs(node), node.file, state));
  const child = await loadProjectNode(dir, source, context, { node, include: config }, state);
  return child ? collectItems(child, state) : [];
}

async function checkoutGitInclude(git: GitInclude, label: string, state: LoadState): Promise<{ dir: string; source: ItemSource }> {
  const spec = typeof git === 'string' ? { url: git } : git;
  const { ref, checkout } = await checkoutRef(spec.url, spec.ref, state).catch((error: Error) => {
    throw new Error(`${label}: ${error.message}`);
  });
  state.environment.inputs?.recordGitRead({ url: spec.url, ref, commit: checkout.commit });
  const dir = path.resolve(checkout.dir, spec.subDir ?? '.');
  await resolveInside(checkout.dir, spec.subDir ?? '.', { label: `${label}: subDir`, root: spec.url });
  if (!(await isDirectory(dir))) throw new Error(`${label}: subDir '${spec.subDir}' not found in ${spec.url}`);
  const id = `git-${createHash('sha256').update(spec.url).digest('hex').slice(0, 10)}-${checkout.commit.slice(0, 10)}`;
  return { dir, source: { root: checkout.dir, id } };
}

/**
 * The artifact an OCI include names, pulled through the shared OCI cache with the environment's registry credentials
 * (kluctl's OciRepoCache.GetExtractedDir); its source is named after the URL and the manifest digest.
 */
async function pullOciInclude(oci: OciInclude, label: string, state: LoadState): Promise<{ dir: string; source: ItemSource }> {
  const { oci: cache, registries, signal } = state.environment;
  const snapshot = await cache.pull(oci.url, oci.ref, registries, signal).catch((error: Error) => {
    throw new Error(`${label}: ${error.message}`);
  });
  state.environment.inputs?.recordOciRead({ url: oci.url, ref: oci.ref, digest: snapshot.digest });
  const dir = path.resolve(snapshot.dir, oci.subDir ?? '.');
  await resolveInside(snapshot.dir, oci.subDir ?? '.', { label: `${label}: subDir`, root: oci.url });
  if (!(await isDirectory(dir))) throw new Error(`${label}: subDir '${oci.subDir}' not found in ${oci.url}`);
  const id = `oci-${createHash('sha256').update(oci.url).digest('hex').slice(0, 10)}-${snapshot.digest.slice('sha256:'.length, 17)}`;
  return { dir, source: { root: snapshot.dir, id } };
}

/**
 * The checkout of `ref`, and the GitRef it was found as: a ref given as a plain string (Kluctl's older form) names a
 * branch or, failing that, a tag.
 */
async function checkoutRef(
  url: string,
  ref: Exclude<GitInclude, string>['ref'],
  state: LoadState,
): Promise<{ ref: GitRef; checkout: Checkout }> {
  const { git, signal } = state.environment;
  const checkoutOf = async (gitRef: GitRef) => ({ ref: gitRef, checkout: await git.checkout(url, gitRef, {}, signal) });
  if (typeof ref !== 'string') return checkoutOf(ref ?? {});
  return checkoutOf({ branch: ref }).catch(() => checkoutOf({ tag: ref }));
}

/**
 * The context an included project starts from: a copy of the including project's; for a library project only the
 * include's `args` (with the library's defaults) and, with `passVars`, every var but `args`.
 */
async function includeContext(node: ProjectNode, config: DeploymentItemConfig, dir: string, label: string): Promise<Values> {
  const libraryFile = await findProjectFile(dir, '.kluctl-library');
  if (!libraryFile) return node.context;
  const library = validate(KluctlLibrarySchema, parseYaml(await readFile(libraryFile, 'utf8'), libraryFile) ?? {}, libraryFile);
  const passed = config.passVars ? Object.fromEntries(Object.entries(node.context).filter(([key]) => key !== 'args')) : {};
  const args = isPlainObject(config.args) ? config.args : {};
  try {
    return { ...passed, args: withDefaultArgs(args, library.args ?? [], libraryFile) };
  } catch (error) {
    throw new Error(`${label}: ${(error as Error).message}`);
  }
}

async function pathItem(node: ProjectNode, config: DeploymentItemConfig, label: string, state: LoadState): Promise<DeploymentItem> {
  const dir = await resolveFolder(node, config.path as string, label);
  const key = `${node.source.id}:${dir}`;
  const index = state.dirUses.get(key) ?? 0;
  state.dirUses.set(key, index + 1);
  const searchDirs = [dir, ...projectSearchDirs(node)];
  const context = await loadVars(config.vars, node.context, varsScope(node, searchDirs, node.file, state));
  return {
    ...inherited(node, config),
    dir,
    relDir: relativeSlashPath(node.source.root, dir),
    index,
    recursive: config.recursive ?? false,
    context,
    searchDirs,
  };
}

/** An item without a folder: a barrier, or objects to delete or wait for. */
function actionItem(node: ProjectNode, config: DeploymentItemConfig): DeploymentItem {
  return {
    ...inherited(node, config),
    dir: undefined,
    relDir: undefined,
    index: 0,
    recursive: false,
    context: node.context,
    searchDirs: projectSearchDirs(node),
  };
}

function inherited(
  node: ProjectNode,
  config: DeploymentItemConfig,
): Omit<DeploymentItem, 'dir' | 'relDir' | 'index' | 'recursive' | 'context' | 'searchDirs'> {
  return {
    source: node.source,
    barrier: config.barrier ?? false,
    message: config.message,
    waitReadiness: config.waitReadiness ?? false,
    onlyRender: config.onlyRender ?? false,
    alwaysDeploy: config.alwaysDeploy ?? false,
    skipDeleteIfTags: config.skipDeleteIfTags ?? false,
    deleteObjects: config.deleteObjects ?? [],
    waitReadinessObjects: config.waitReadinessObjects ?? [],
    tags: [...new Set([...projectTags(node), ...(config.tags ?? [])])],
    commonLabels: mergedFromRoot(node, (config) => config.commonLabels),
    commonAnnotations: mergedFromRoot(node, (config) => config.commonAnnotations),
    overrideNamespace: nearest(node, (config) => config.overrideNamespace),
    conflictResolution: collected(node, (config) => config.conflictResolution),
    ignoreForDiff: collected(node, (config) => config.ignoreForDiff),
    declaredIn: node.file,
  };
}

async function resolveFolder(node: ProjectNode, relative: string, label: string): Promise<string> {
  const dir = path.resolve(node.dir, relative);
  // The check follows symlinks, so a folder linked to one outside the project is refused; the lexical path is kept
  // because later steps name files relative to the source root.
  await resolveInside(node.source.root, relative, { base: node.dir, label, root: 'the project' });
  if (!(await isDirectory(dir))) throw new Error(`${label}: folder '${relative}' does not exist`);
  return dir;
}

/** This project's folder, then its parents' within the same source (kluctl's getRenderSearchDirs). */
function projectSearchDirs(node: Pick<ProjectNode, 'dir' | 'source' | 'parent'>): string[] {
  const dirs: string[] = [];
  for (let current: Pick<ProjectNode, 'dir' | 'source' | 'parent'> | undefined = node; current; current = current.parent?.node) {
    if (current.source.root === node.source.root) dirs.push(current.dir);
  }
  return dirs;
}

/** Tags from the project, the include that brought it in, and so on up to the root (kluctl's getTags order). */
function projectTags(node: ProjectNode): string[] {
  const tags: string[] = [];
  let include: DeploymentItemConfig | undefined;
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) {
    tags.push(...(include?.tags ?? []), ...(current.config.tags ?? []));
    include = current.parent?.include;
  }
  return tags;
}

function mergedFromRoot(
  node: ProjectNode,
  pick: (config: DeploymentProjectConfig) => Record<string, string> | undefined,
): Record<string, string> {
  const chain: ProjectNode[] = [];
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) chain.unshift(current);
  return Object.assign({}, ...chain.map((current) => pick(current.config) ?? {}));
}

function collected<T>(node: ProjectNode, pick: (config: DeploymentProjectConfig) => T[] | undefined): T[] {
  const all: T[] = [];
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) all.push(...(pick(current.config) ?? []));
  return all;
}

function nearest<T>(node: ProjectNode, pick: (config: DeploymentProjectConfig) => T | undefined): T | undefined {
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) {
    const value = pick(current.config);
    if (value !== undefined) return value;
  }
  return undefined;
}

function varsScope(node: Pick<ProjectNode, 'source'>, searchDirs: readonly string[], declaredIn: string, state: LoadState) {
  return { rootDir: node.source.root, searchDirs, declaredIn, environment: state.environment };
}

function conditionScope(node: ProjectNode, state: LoadState): StringScope {
  return { rootDir: node.source.root, dir: node.dir, name: node.file, context: node.context, signal: state.environment.signal };
}
