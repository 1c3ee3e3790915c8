/**
 * The `helm-chart.yaml` file, as kluctl's helm docs and its HelmChartConfig validation define it, and the chart
 * source it names: a Helm repository (http/https), an OCI registry, a git repository or a local folder.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { parseYaml } from '../yaml.ts';
import { validate } from '../validate.ts';
import { isInside } from '../files.ts';
import { ProblemList } from '../problems.ts';
import type { GitRef } from '../source/git-cache.ts';

const Strict = { additionalProperties: false } as const;

const GitChartSchema = Type.Union([
  Type.String(),
  Type.Object(
    {
      url: Type.String({ minLength: 1 }),
      ref: Type.Optional(
        Type.Object(
          { branch: Type.Optional(Type.String()), tag: Type.Optional(Type.String()), commit: Type.Optional(Type.String()) },
          Strict,
        ),
      ),
      subDir: Type.Optional(Type.String()),
    },
    Strict,
  ),
]);

const HelmChartFileSchema = Type.Object(
  {
    helmChart: Type.Object(
      {
        repo: Type.Optional(Type.String()),
        path: Type.Optional(Type.String()),
        git: Type.Optional(GitChartSchema),
        chartName: Type.Optional(Type.String()),
        chartVersion: Type.Optional(Type.String()),
        updateConstraints: Type.Optional(Type.String()),
        releaseName: Type.String({ minLength: 1 }),
        namespace: Type.Optional(Type.String()),
        output: Type.Optional(Type.String()),
        skipCRDs: Type.Optional(Type.Boolean()),
        // Gantry's extension (Kluctl has none): the chart's hooks are left out (helm template --no-hooks), as Plural's
        // ignoreHooks asks; the server writes it for such helm services.
        skipHooks: Type.Optional(Type.Boolean()),
        skipUpdate: Type.Optional(Type.Boolean()),
        skipPrePull: Type.Optional(Type.Boolean()),
        credentialsId: Type.Optional(Type.String()),
      },
      Strict,
    ),
  },
  Strict,
);
export type HelmChartConfig = Static<typeof HelmChartFileSchema>['helmChart'];

/** Default `output` of a chart, as Kluctl defines it. */
export const DEFAULT_HELM_OUTPUT = 'helm-rendered.yaml';

/** A chart in a Helm repository (`https://…`) or an OCI registry (`oci://host/path/chart`), at one version. */
export interface RegistryChartSource {
  kind: 'helm-repo' | 'oci';
  repo: string;
  chartName: string;
  version: string;
  /** HTTP basic credentials of a Helm repository (the fleet server's HelmRepository); never written to a file. */
  credentials?: { username: string; password: string };
}

/** A chart in a git repository: the folder `subDir` of the commit `ref` names (default branch without one). */
export interface GitChartSource {
  kind: 'git';
  url: string;
  ref: GitRef;
  subDir: string;
  chartName: string;
}

export interface LocalChartSource {
  kind: 'local';
  dir: string;
}

export type RemoteChartSource = RegistryChartSource | GitChartSource;
export type ChartSource = RemoteChartSource | LocalChartSource;

/**
 * Reads and checks a helm-chart.yaml: its schema, then kluctl's rules on which fields go together.
 * @param shownAs how messages name the file (a rendered copy is named as the project's file).
 * @throws ProblemList with one `<shownAs>: <problem>` per problem.
 */
export async function readHelmChartConfig(file: string, shownAs = file): Promise<HelmChartConfig> {
  const config = validate(HelmChartFileSchema, parseYaml(await readFile(file, 'utf8'), shownAs) ?? {}, shownAs).helmChart;
  const problems = combinationProblems(config);
  if (problems.length > 0) throw new ProblemList(problems.map((problem) => `${shownAs}: ${problem}`));
  return config;
}

/** Kluctl's ValidateHelmChartConfig2 and GitRef rules, as messages. */
function combinationProblems(config: HelmChartConfig): string[] {
  const sources = [config.repo, config.path, config.git].filter((value) => value !== undefined && value !== '');
  if (sources.length === 0) return ["helmChart needs one of 'repo', 'path' or 'git'"];
  if (sources.length > 1) return ["helmChart takes only one of 'repo', 'path' and 'git'"];
  const problems: string[] = [];
  const forbid = (field: 'chartName' | 'chartVersion' | 'updateConstraints', why: string) => {
    if (config[field] !== undefined) problems.push(`'${field}' can not be used ${why}`);
  };
  if (config.repo) {
    if (!config.chartVersion) problems.push("'chartVersion' is required with 'repo'");
    if (isOciUrl(config.repo)) forbid('chartName', "with an oci:// repo (the chart's name is the last part of the URL)");
    else if (!config.chartName) problems.push("'chartName' is required with a Helm repository 'repo'");
    if (!/^(https?|oci):\/\//.test(config.repo)) problems.push(`repo '${config.repo}' must be an http://, https:// or oci:// URL`);
  } else if (config.path !== undefined) {
    for (const field of ['chartName', 'chartVersion', 'updateConstraints'] as const) forbid(field, "with a local chart 'path'");
    if (path.isAbsolute(config.path)) problems.push(`local chart path '${config.path}' must be relative to the helm-chart.yaml`);
  } else if (config.git !== undefined) {
    for (const field of ['chartName', 'chartVersion'] as const) forbid(field, "with a 'git' chart (the ref selects the version)");
    const ref = typeof config.git === 'string' ? undefined : config.git.ref;
    const refCount = ref ? [ref.branch, ref.tag, ref.commit].filter(Boolean).length : 1;
    if (refCount === 0) problems.push("git.ref needs one of 'branch', 'tag' or 'commit'");
    if (refCount > 1) problems.push("git.ref takes only one of 'branch', 'tag' and 'commit'");
    const subDir = typeof config.git === 'string' ? '' : (config.git.subDir ?? '');
    if (subDir.split('/').some((part) => part === '..' || /[\\:*?"<>|\0]/.test(part)))
      problems.push(`git.subDir '${subDir}' is not a valid folder path`);
  }
  return problems;
}

/** True for an `oci://` repo URL (case-sensitive prefix), as Helm's registry.IsOCI tells OCI charts from the rest. */
export function isOciUrl(url: string): boolean {
  return url.startsWith('oci://');
}

/**
 * The chart source a checked config names.
 * @param chartFileDir the folder of the helm-chart.yaml in the project (local paths are relative to it).
 * @param projectRoot local charts must stay inside it, as Kluctl requires.
 * @throws Error naming `file` when a chart name can not be derived or a local path leaves the project.
 */
export function chartSourceOf(config: HelmChartConfig, file: string, chartFileDir: string, projectRoot: string): ChartSource {
  if (config.path !== undefined) {
    const dir = path.resolve(chartFileDir, config.path);
    if (!isInside(projectRoot, dir)) throw new Error(`${file}: local chart '${config.path}' is outside the project`);
    return { kind: 'local', dir };
  }
  if (config.git !== undefined) {
    const git = typeof config.git === 'string' ? { url: config.git } : config.git;
    const subDir = (git.subDir ?? '').replace(/^\/+|\/+$/g, '');
    const chartName = path.posix.basename(subDir || gitUrlPath(git.url).replace(/\.git$/, ''));
    if (!/[a-zA-Z_-]/.test(chartName))
      throw new Error(`${file}: can not derive a chart name from git url '${git.url}' and subDir '${subDir}'`);
    return { kind: 'git', url: git.url, ref: { ...git.ref }, subDir, chartName };
  }
  const repo = config.repo as string;
  const version = config.chartVersion as string;
  if (isOciUrl(repo)) {
    const chartName = repo.replace(/\/+$/, '').split('/').pop() ?? '';
    if (!/[a-zA-Z_-]/.test(chartName)) throw new Error(`${file}: invalid oci chart url '${repo}'`);
    return { kind: 'oci', repo: repo.replace(/\/+$/, ''), chartName, version };
  }
  return { kind: 'helm-repo', repo: repo.replace(/\/+$/, ''), chartName: config.chartName as string, version };
}

/** The path part of a git URL, including scp-like `git@host:org/repo.git`. */
export function gitUrlPath(url: string): string {
  const scp = /^[^/@:]+@[^/:]+:(.*)$/.exec(url);
  if (scp) return `/${scp[1]}`;
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** The version of a remote chart as people write it: `1.2.3`, or the git ref (`tag v1.0.0`, `branch main`). */
export function describeVersion(source: RemoteChartSource): string {
  if (source.kind !== 'git') return source.version;
  const { branch, tag, commit } = source.ref;
  return tag ? `tag ${tag}` : branch ? `branch ${branch}` : commit ? `commit ${commit}` : 'the default branch';
}

/** Where a remote chart comes from, for messages: `redis from https://charts.example.com`. */
export function describeChart(source: RemoteChartSource): string {
  if (source.kind === 'git') return `${source.chartName} from git ${source.url}${source.subDir ? ` (${source.subDir})` : ''}`;
  return `${source.chartName} from ${source.repo}`;
}

/** One key per chart (whatever its version), so releases of the same chart are pulled together. */
export function chartKey(source: RemoteChartSource): string {
  if (source.kind === 'git') return `git ${source.url} ${source.subDir}`;
  return source.kind === 'oci' ? `oci ${source.repo}` : `repo ${source.repo} ${source.chartName}`;
}
