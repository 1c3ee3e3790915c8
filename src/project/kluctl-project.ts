/**
 * The `.kluctl.yaml` project file and the target chosen from it, as kluctl's kluctl-project docs define them:
 * targets with args, project args with defaults, and a discriminator template.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseYaml } from '../yaml.ts';
import { KluctlProjectSchema, type ArgDefinition, type KluctlProjectConfig, type TargetConfig } from './schema.ts';
import { validate } from '../validate.ts';
import { deepMerge, getPath, setPath, type Values } from '../values.ts';
import { renderStrings } from './render-values.ts';
import { validateFixedImages, type FixedImage } from './fixed-images.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';
import { findProjectFile } from '../files.ts';
import { checkArgName } from './args.ts';

/** A loaded project file; `file` is undefined for a project without `.kluctl.yaml` (Kluctl's no-name target). */
export interface KluctlProject {
  dir: string;
  file: string | undefined;
  config: KluctlProjectConfig;
}

/** The target a command runs against, fully rendered. */
export interface ResolvedTarget {
  /** Target name; '' for the no-name target of a project without targets. */
  name: string;
  /** The kubeconfig context this run uses (flag, else the target's, else the kubeconfig's current context). */
  context: string | undefined;
  /** Target args merged with command-line args, defaults filled in. */
  args: Values;
  /** Rendered discriminator; '' when the project defines none. */
  discriminator: string;
  /** The target's fixed images (`images` in .kluctl.yaml). */
  images: FixedImage[];
  /** The target as templates see it (`target.*`). */
  templateValue: Values;
}

/**
 * Reads the project file of `projectDir`: `.kluctl.yml`, else `.kluctl.yaml`. A folder with neither is a project
 * without targets, args or discriminator (`file` undefined, `config` empty), as Kluctl allows. Nothing is rendered
 * here: resolveTarget renders the chosen target.
 * @returns `dir` made absolute, the file's path, and its validated content.
 * @throws YamlError for invalid YAML; ProblemList naming the file and each field that breaks KluctlProjectSchema.
 */
export async function loadKluctlProject(projectDir: string): Promise<KluctlProject> {
  const dir = path.resolve(projectDir);
  const file = await findProjectFile(dir, '.kluctl');
  if (!file) return { dir, file: undefined, config: {} };
  const config = validate(KluctlProjectSchema, parseYaml(await readFile(file, 'utf8'), file) ?? {}, file);
  return { dir, file, config };
}

export interface TargetSelection {
  targetName: string | undefined;
  /** Args from `-a name=value`, already parsed. They override the target's args. */
  externalArgs: Values;
  /** `--context`: overrides the target's context. */
  contextOverride: string | undefined;
  /** The kubeconfig's current context, used when neither the flag nor the target names one. */
  defaultContext: string | undefined;
  /** `-T/--target-name-override`: the target's name as templates and the discriminator see it. */
  nameOverride?: string | undefined;
  /** `--discriminator`: replaces the target's and the project's discriminator template. */
  discriminatorOverride?: string | undefined;
  /** Abandons the rendering of the target. */
  signal?: AbortSignal | undefined;
}

/** A rendered target (args included) larger than this, as JSON, is refused: each pass may multiply its size. */
const MAX_TARGET_CHARS = 1024 * 1024;

/**
 * Picks and renders the target, as Kluctl does: every string in the target is a Jinja2 template over `target`
 * and `args`, rendered repeatedly (up to 10 times) until nothing changes, so a target may refer to its own fields.
 * @throws Error for an unknown or missing target name, a missing required arg, a template error, or a target
 *   whose rendering grows past MAX_TARGET_CHARS.
 */
export async function resolveTarget(project: KluctlProject, selection: TargetSelection, renderer: JinjaPool): Promise<ResolvedTarget> {
  const config = selectTarget(project, selection.targetName);
  if (selection.nameOverride) config.name = selection.nameOverride;
  const args = withDefaultArgs(deepMerge(config.args ?? {}, selection.externalArgs), project.config.args ?? [], project.file);
  const context = selection.contextOverride ?? config.context ?? selection.defaultContext;
  const discriminator = selection.discriminatorOverride ?? config.discriminator ?? project.config.discriminator ?? '';
  let target: Values = { ...config, args, discriminator, ...(context === undefined ? {} : { context }) };
  for (let attempt = 0; attempt < 10; attempt++) {
    const context = { target, args: target['args'] as Values };
    const rendered = await renderStrings(
      target,
      { rootDir: project.dir, dir: project.dir, name: project.file ?? '.kluctl.yaml', context, signal: selection.signal },
      renderer,
    );
    const json = JSON.stringify(rendered);
    if (json === JSON.stringify(target)) break;
    if (json.length > MAX_TARGET_CHARS) {
      throw new Error(
        `${project.file ?? '.kluctl.yaml'}: target '${config.name}': rendering its fields made them larger than 1 MiB; a field that includes itself (such as {{ args | tojson }} in an arg) grows with every pass`,
      );
    }
    target = rendered as Values;
  }
  return {
    name: config.name,
    context: target['context'] as string | undefined,
    args: target['args'] as Values,
    discriminator: String(target['discriminator'] ?? ''),
    images: validateFixedImages(target['images'] ?? [], `${project.file}: target ${config.name}`),
    templateValue: target,
  };
}

function selectTarget(project: KluctlProject, name: string | undefined): TargetConfig {
  const targets = project.config.targets ?? [];
  if (targets.length === 0) {
    if (name) throw new Error(`target '${name}' not found: ${project.file ?? 'the project'} defines no targets`);
    return { name: '' };
  }
  if (!name) throw new Error(`a target is required (-t): ${project.file} defines ${targets.map((t) => t.name).join(', ')}`);
  const target = targets.find((candidate) => candidate.name === name);
  if (!target) throw new Error(`target '${name}' not found in ${project.file}; known targets: ${targets.map((t) => t.name).join(', ')}`);
  return structuredClone(target);
}

/**
 * Fills in arg defaults and checks required args, as kluctl's LoadDefaultArgs does (for .kluctl.yaml and for
 * library projects' .kluctl-library.yaml).
 * @throws Error naming `file` and the missing arg, or an arg whose name would reach Object.prototype.
 */
export function withDefaultArgs(args: Values, definitions: readonly ArgDefinition[], file: string | undefined): Values {
  let defaults: Values = {};
  for (const definition of definitions) {
    checkArgName(definition.name, `${file}: argument '${definition.name}'`);
    if (definition.default === undefined) continue;
    const value: Values = {};
    setPath(value, definition.name, structuredClone(definition.default));
    defaults = deepMerge(defaults, value);
  }
  const merged = deepMerge(defaults, args);
  for (const definition of definitions) {
    if (getPath(merged, definition.name) === undefined) {
      throw new Error(`${file}: required argument '${definition.name}' is not set (pass it with -a ${definition.name}=...)`);
    }
  }
  return merged;
}
