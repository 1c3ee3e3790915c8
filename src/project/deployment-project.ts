/**
 * Loads the deployment.yaml tree of a Kluctl project into a flat, ordered list of deployment items, as kluctl's
 * deployment-yml, tags and templating docs define it:
 * - each deployment.yaml is rendered by Jinja2 with the vars of its parent before it is parsed, then its own
 *   `vars` are loaded for its items and includes;
 * - `when` skips an item (or, on an included project, the whole project);
 * - tags are inherited (parent include's tags, then the project's) and an item without tags gets the base name of
 *   its path as its tag; commonLabels/commonAnnotations merge root to leaf (child wins); the nearest
 *   overrideNamespace wins;
 * - a root folder without deployment.yaml is one item `path: .`.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseYaml } from '../yaml.ts';
import { DeploymentProjectSchema, UNSUPPORTED_ITEM_KEYS, validate, type DeploymentItemConfig, type DeploymentProjectConfig } from './schema.ts';
import { evaluateCondition, type StringScope } from './render-values.ts';
import type { ProjectEnvironment } from './environment.ts';
import type { Values } from './values.ts';
import { loadVars } from './vars.ts';
import { findProjectFile, isDirectory, isInside, relativeSlashPath } from './files.ts';

/** One entry of the flattened deployment list. */
export interface DeploymentItem {
  /** Absolute folder of a `path` item; undefined for a pure barrier. */
  dir: string | undefined;
  /** `dir` relative to the project root with forward slashes (Kluctl's kluctl.io/deployment-item-dir). */
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
  tags: string[];
  /** Templating context of the item: target, args and every var visible to it. */
  context: Values;
  /** Include/import search folders, nearest first: the item folder, its project folder, parent project folders. */
  searchDirs: string[];
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  overrideNamespace: string | undefined;
  /** The deployment.yaml declaring the item (for messages). */
  declaredIn: string;
}

interface ProjectNode {
  dir: string;
  file: string;
  config: DeploymentProjectConfig;
  context: Values;
  parent: { node: ProjectNode; include: DeploymentItemConfig } | undefined;
}

interface LoadState {
  rootDir: string;
  environment: ProjectEnvironment;
  dirUses: Map<string, number>;
}

/**
 * Loads the tree below `rootDir` with the root templating context (target, args).
 * @throws Error naming the deployment.yaml (and item) for template errors, invalid YAML, unknown keys,
 * missing folders, and paths outside the project.
 */
export async function loadDeploymentItems(rootDir: string, rootContext: Values, environment: ProjectEnvironment): Promise<DeploymentItem[]> {
  const state: LoadState = { rootDir: path.resolve(rootDir), environment, dirUses: new Map() };
  const root = await loadProjectNode(state.rootDir, rootContext, undefined, state);
  return root ? collectItems(root, state) : [];
}

async function loadProjectNode(dir: string, context: Values, parent: ProjectNode['parent'], state: LoadState): Promise<ProjectNode | undefined> {
  const file = await findProjectFile(dir, 'deployment');
  const label = file ?? path.join(dir, 'deployment.yaml');
  const searchDirs = [dir, ...(parent ? projectSearchDirs(parent.node) : [])];
  const config = file ? await readProjectConfig(file, searchDirs, context, state) : await implicitConfig(dir, parent, state);
  if (!parent && config.when !== undefined) throw new Error(`${label}: the root deployment project can not contain 'when'`);
  const node: ProjectNode = { dir, file: label, config, context, parent };
  node.context = await loadVars(config.vars, context, { rootDir: state.rootDir, searchDirs: projectSearchDirs(node), declaredIn: label, environment: state.environment });
  if (!(await evaluateCondition(config.when, conditionRequest(node, state), state.environment.renderer))) return undefined;
  return node;
}

async function readProjectConfig(file: string, searchDirs: readonly string[], context: Values, state: LoadState): Promise<DeploymentProjectConfig> {
  const relative = relativeSlashPath(state.rootDir, file);
  const relativeSearchDirs = searchDirs.map((dir) => relativeSlashPath(state.rootDir, dir));
  const [rendered] = await state.environment.renderer.renderFiles({ rootDir: state.rootDir, files: [relative], context, searchDirs: relativeSearchDirs });
  if (!rendered || 'error' in rendered) throw rendered?.error ?? new Error(`${file}: not rendered`);
  const config = validate(DeploymentProjectSchema, parseYaml(rendered.text, file) ?? {}, file);
  for (const [index, item] of (config.deployments ?? []).entries()) {
    if (!item.tags) item.tags = defaultTags(item);
    rejectUnsupported(item, `${file}: deployments[${index}]`);
  }
  return config;
}

/** Without deployment.yaml, only the root is allowed, as one `path: .` item. */
async function implicitConfig(dir: string, parent: ProjectNode['parent'], state: LoadState): Promise<DeploymentProjectConfig> {
  if (!parent) return { deployments: [{ path: '.', tags: [] }] };
  const entries = await readdir(dir).catch(() => [] as string[]);
  const relative = relativeSlashPath(state.rootDir, dir);
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

function rejectUnsupported(item: DeploymentItemConfig, label: string): void {
  for (const key of UNSUPPORTED_ITEM_KEYS) {
    if (item[key] !== undefined) throw new Error(`${label}: '${key}' is not supported by this version of Gantry`);
  }
}

async function collectItems(node: ProjectNode, state: LoadState): Promise<DeploymentItem[]> {
  const items: DeploymentItem[] = [];
  for (const [index, config] of (node.config.deployments ?? []).entries()) {
    const label = `${node.file}: deployments[${index}]`;
    if (!(await evaluateCondition(config.when, conditionRequest(node, state), state.environment.renderer))) continue;
    if (config.include !== undefined) {
      items.push(...(await collectInclude(node, config, label, state)));
      if (config.barrier) items.push(barrierItem(node, config));
    } else if (config.path !== undefined) {
      items.push(await pathItem(node, config, label, state));
    } else if (config.barrier) {
      items.push(barrierItem(node, config));
    } else {
      throw new Error(`${label}: an item needs one of 'path', 'include' or 'barrier'`);
    }
  }
  return items;
}

async function collectInclude(node: ProjectNode, config: DeploymentItemConfig, label: string, state: LoadState): Promise<DeploymentItem[]> {
  const dir = await resolveFolder(node.dir, config.include as string, label, state);
  const context = await loadVars(config.vars, node.context, { rootDir: state.rootDir, searchDirs: projectSearchDirs(node), declaredIn: node.file, environment: state.environment });
  const child = await loadProjectNode(dir, context, { node, include: config }, state);
  return child ? collectItems(child, state) : [];
}

async function pathItem(node: ProjectNode, config: DeploymentItemConfig, label: string, state: LoadState): Promise<DeploymentItem> {
  const dir = await resolveFolder(node.dir, config.path as string, label, state);
  const index = state.dirUses.get(dir) ?? 0;
  state.dirUses.set(dir, index + 1);
  const searchDirs = [dir, ...projectSearchDirs(node)];
  const context = await loadVars(config.vars, node.context, { rootDir: state.rootDir, searchDirs, declaredIn: node.file, environment: state.environment });
  return {
    ...inherited(node, config),
    dir,
    relDir: relativeSlashPath(state.rootDir, dir),
    index,
    context,
    searchDirs,
  };
}

function barrierItem(node: ProjectNode, config: DeploymentItemConfig): DeploymentItem {
  return { ...inherited(node, { barrier: true, message: config.message }), dir: undefined, relDir: undefined, index: 0, context: node.context, searchDirs: projectSearchDirs(node) };
}

function inherited(node: ProjectNode, config: DeploymentItemConfig): Omit<DeploymentItem, 'dir' | 'relDir' | 'index' | 'context' | 'searchDirs'> {
  return {
    barrier: config.barrier ?? false,
    message: config.message,
    waitReadiness: config.waitReadiness ?? false,
    onlyRender: config.onlyRender ?? false,
    alwaysDeploy: config.alwaysDeploy ?? false,
    skipDeleteIfTags: config.skipDeleteIfTags ?? false,
    tags: [...new Set([...projectTags(node), ...(config.tags ?? [])])],
    commonLabels: mergedFromRoot(node, (config) => config.commonLabels),
    commonAnnotations: mergedFromRoot(node, (config) => config.commonAnnotations),
    overrideNamespace: nearest(node, (config) => config.overrideNamespace),
    declaredIn: node.file,
  };
}

async function resolveFolder(base: string, relative: string, label: string, state: LoadState): Promise<string> {
  const dir = path.resolve(base, relative);
  if (!isInside(state.rootDir, dir)) throw new Error(`${label}: '${relative}' is outside the project`);
  if (!(await isDirectory(dir))) throw new Error(`${label}: folder '${relative}' does not exist`);
  return dir;
}

/** This project's folder, then its parents' (kluctl's getRenderSearchDirs). */
function projectSearchDirs(node: ProjectNode): string[] {
  const dirs: string[] = [];
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) dirs.push(current.dir);
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

function mergedFromRoot(node: ProjectNode, pick: (config: DeploymentProjectConfig) => Record<string, string> | undefined): Record<string, string> {
  const chain: ProjectNode[] = [];
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) chain.unshift(current);
  return Object.assign({}, ...chain.map((current) => pick(current.config) ?? {}));
}

function nearest<T>(node: ProjectNode, pick: (config: DeploymentProjectConfig) => T | undefined): T | undefined {
  for (let current: ProjectNode | undefined = node; current; current = current.parent?.node) {
    const value = pick(current.config);
    if (value !== undefined) return value;
  }
  return undefined;
}

function conditionRequest(node: ProjectNode, state: LoadState): StringScope {
  return { rootDir: state.rootDir, dir: node.dir, name: node.file, context: node.context };
}
