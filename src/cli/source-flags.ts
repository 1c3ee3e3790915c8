/**
 * The flags that name a fleet service's source and renderer, shared by `gantry service create|update` and
 * `gantry globalservice create` (whose template is a service's source): a folder of a git repository, or a Helm
 * chart (`--helm-url`, `--chart`, `--chart-version`, values from `--values-file` and `--set`), or both when the
 * chart's values files come from git (`--git-values-file`).
 */
import { readFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { deepMerge, isPlainObject, setPath, type Values } from '../values.ts';
import { parseYaml } from '../yaml.ts';
import { keyValueArg } from './fleet-output.ts';

export interface SourceFlags {
  namespace?: string;
  repo?: string;
  ref?: string;
  folder?: string;
  renderer?: 'auto' | 'kluctl' | 'kustomize' | 'raw';
  target?: string;
  arg: Record<string, string>;
  config: Record<string, string>;
  context: string[];
  helmUrl?: string;
  chart?: string;
  chartVersion?: string;
  valuesFile: string[];
  set: string[];
  gitValuesFile: string[];
  secretValuesFile: string[];
  release?: string;
}

/** A chart source as the API takes it (all parts optional: an update sends only what changes). */
export interface HelmFlagsSource {
  url?: string;
  chart?: string;
  version?: string;
  values?: Values;
  valuesFiles?: string[];
  release?: string;
}

const repeatable = (value: string, previous: string[]) => [...previous, value];

export function addSourceFlags(command: Command): Command {
  return command
    .option('--namespace <name>', 'namespace of the service (default for objects without one)')
    .option('--repo <url-or-id>', 'the git repository (see gantry repo add)')
    .option('--ref <ref>', 'branch, tag or commit')
    .option('--folder <path>', 'folder of the repository holding the service')
    .addOption(
      new Option('--renderer <kind>', 'how to render the folder (auto: by its files)').choices(['auto', 'kluctl', 'kustomize', 'raw']),
    )
    .option('--target <name>', 'kluctl: the target')
    .option('--arg <name=value>', 'kluctl: an arg (repeatable)', keyValueArg, {})
    .option('--config <key=value>', 'a configuration value (repeatable; replaces the whole configuration on update)', keyValueArg, {})
    .option(
      '--context <name>',
      'a service context to bind, read in Liquid templates as contexts.<name> (repeatable; replaces the bound ones on update)',
      repeatable,
      [],
    )
    .option('--helm-url <url>', 'helm: the chart repository (https://…) or OCI registry path (oci://…)')
    .option('--chart <name>', 'helm: the chart')
    .option('--chart-version <version>', 'helm: an exact version or a semver range (newest match)')
    .option(
      '--values-file <file>',
      'helm: a local YAML file of values (repeatable, merged in order; on update, values are replaced whole)',
      repeatable,
      [],
    )
    .option(
      '--set <path=value>',
      'helm: a value at a dotted path; true, false, null and integers are typed (repeatable, over --values-file)',
      repeatable,
      [],
    )
    .option('--git-values-file <path>', 'helm: a values file in the git folder (repeatable; needs --repo and --ref)', repeatable, [])
    .option(
      '--secret-values-file <file>',
      'helm: a local YAML file of values that are secrets, sealed by the server and never shown (repeatable, merged over the others; on update, replaced whole)',
      repeatable,
      [],
    )
    .option('--release <name>', 'helm: the release name (default: the service name)');
}

/** The renderer the flags ask for: kluctl when a target or args are given, else auto unless named. */
export function rendererFromFlags(flags: SourceFlags) {
  const kind = flags.renderer ?? (flags.target || Object.keys(flags.arg).length > 0 ? 'kluctl' : 'auto');
  return kind === 'kluctl' ? { kind, target: flags.target, args: flags.arg } : { kind };
}

/**
 * The chart parts the flags give; undefined when they give none.
 * @throws Error naming a values file that cannot be read or is not a mapping; InvalidArgumentError for a bad --set.
 */
export async function helmFromFlags(flags: SourceFlags): Promise<HelmFlagsSource | undefined> {
  const values = await valuesFromFlags(flags);
  const helm: HelmFlagsSource = {
    ...(flags.helmUrl ? { url: flags.helmUrl } : {}),
    ...(flags.chart ? { chart: flags.chart } : {}),
    ...(flags.chartVersion ? { version: flags.chartVersion } : {}),
    ...(values ? { values } : {}),
    ...(flags.gitValuesFile.length > 0 ? { valuesFiles: flags.gitValuesFile } : {}),
    ...(flags.release ? { release: flags.release } : {}),
  };
  return Object.keys(helm).length > 0 ? helm : undefined;
}

/** The --secret-values-file files merged in order; undefined when none is given. */
export async function secretValuesFromFlags(flags: SourceFlags): Promise<Values | undefined> {
  return flags.secretValuesFile.length > 0 ? await mergedValuesFiles(flags.secretValuesFile, '--secret-values-file') : undefined;
}

/** --values-file files merged in order, --set values over them; undefined when neither is given. */
async function valuesFromFlags(flags: SourceFlags): Promise<Values | undefined> {
  if (flags.valuesFile.length === 0 && flags.set.length === 0) return undefined;
  const values = await mergedValuesFiles(flags.valuesFile, '--values-file');
  for (const assignment of flags.set) {
    const separator = assignment.indexOf('=');
    if (separator <= 0) throw new InvalidArgumentError(`--set '${assignment}' is not path=value`);
    setPath(values, assignment.slice(0, separator), setValue(assignment.slice(separator + 1)));
  }
  return values;
}

/** A --set value typed as helm's strvals types it: true/false, null and integers; anything else is a string. */
async function mergedValuesFiles(files: readonly string[], flag: string): Promise<Values> {
  let values: Values = {};
  for (const file of files) {
    const parsed = parseYaml(await readFile(file, 'utf8'), file) ?? {};
    if (!isPlainObject(parsed)) throw new Error(`${flag} ${file} is not a YAML mapping`);
    values = deepMerge(values, parsed);
  }
  return values;
}

function setValue(text: string): unknown {
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null') return null;
  if (/^-?\d+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  return text;
}

/** The source a create needs: git, helm, or helm with values files from git. @throws Error naming the missing flags. */
export async function requiredSource(flags: SourceFlags): Promise<{
  namespace: string;
  repository?: string;
  git?: { ref: string; folder: string };
  helm?: { url: string; chart: string; version: string; values?: Values; valuesFiles?: string[]; release?: string };
  secretValues?: Values;
  contexts?: string[];
}> {
  if (!flags.namespace) throw new Error('create needs --namespace');
  const helm = await helmFromFlags(flags);
  const secretValues = await secretValuesFromFlags(flags);
  const git = flags.repo || flags.ref ? gitFromFlags(flags) : undefined;
  const contexts = flags.context.length > 0 ? { contexts: flags.context } : {};
  if (!helm) {
    if (!git) throw new Error('create needs --repo and --ref, or --helm-url, --chart and --chart-version');
    return { namespace: flags.namespace, ...git, ...contexts };
  }
  if (!helm.url || !helm.chart || !helm.version) throw new Error('a helm source needs --helm-url, --chart and --chart-version');
  return {
    namespace: flags.namespace,
    ...git,
    helm: { ...helm, url: helm.url, chart: helm.chart, version: helm.version },
    ...(secretValues ? { secretValues } : {}),
    ...contexts,
  };
}

function gitFromFlags(flags: SourceFlags): { repository: string; git: { ref: string; folder: string } } {
  if (!flags.repo || !flags.ref) throw new Error('a git source needs --repo and --ref');
  return { repository: flags.repo, git: { ref: flags.ref, folder: flags.folder ?? '' } };
}
