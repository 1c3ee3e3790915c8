/**
 * Helm charts in deployment items, as kluctl's helm docs define them: a `helm-chart.yaml` (with a rendered
 * `helm-values.yaml` beside it) is rendered by the helm binary into its `output` file, which kustomize then picks
 * up. Charts come pre-pulled from the nearest `.helm-charts/` folder (`<scheme>[_port]_<host>/<path>/<chart>/<version>`)
 * or from a local `path`; rendering never touches the network.
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { run } from '../exec.ts';
import { toolPath } from '../tools.ts';
import { parseYaml, parseYamlDocuments, toYamlDocuments } from '../yaml.ts';
import { validate } from '../project/schema.ts';
import { findProjectFile, isDirectory, isInside } from '../project/files.ts';
import { isPlainObject } from '../project/values.ts';
import type { KubeObject } from '../kube/object.ts';

/** Marks objects whose namespace defaults to the release namespace (kluctl's annotation of the same meaning). */
export const HELM_NAMESPACE_ANNOTATION = 'kluctl.io/helm-install-namespace';

const HelmChartFileSchema = Type.Object(
  {
    helmChart: Type.Object(
      {
        repo: Type.Optional(Type.String()),
        path: Type.Optional(Type.String()),
        git: Type.Optional(Type.Unknown()),
        chartName: Type.Optional(Type.String()),
        chartVersion: Type.Optional(Type.String()),
        updateConstraints: Type.Optional(Type.String()),
        releaseName: Type.String({ minLength: 1 }),
        namespace: Type.Optional(Type.String()),
        output: Type.Optional(Type.String()),
        skipCRDs: Type.Optional(Type.Boolean()),
        skipUpdate: Type.Optional(Type.Boolean()),
        skipPrePull: Type.Optional(Type.Boolean()),
        credentialsId: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type HelmChartConfig = Static<typeof HelmChartFileSchema>['helmChart'];

export interface HelmEnvironment {
  /** Kubernetes version charts are rendered for (`v1.35.4`). */
  kubeVersion: string;
  /** group/version and group/version/Kind strings the cluster serves; empty when rendering offline. */
  apiVersions: readonly string[];
  /** Scratch folder for helm's own config/cache/data, so no user configuration leaks in. */
  helmHome: string;
}

/** Default `output` of a chart, as Kluctl defines it. */
export const DEFAULT_HELM_OUTPUT = 'helm-rendered.yaml';

/** Reads and checks a rendered helm-chart.yaml. */
export async function readHelmChartConfig(file: string): Promise<HelmChartConfig> {
  return validate(HelmChartFileSchema, parseYaml(await readFile(file, 'utf8'), file) ?? {}, file).helmChart;
}

/**
 * Renders the chart configured in `<renderedDir>/helm-chart.yaml` into `<renderedDir>/<output>`.
 * @param sourceDir the item folder in the project (where `.helm-charts` and local chart paths are resolved from).
 * @throws Error naming the helm-chart.yaml for a missing pre-pulled chart, an unsupported source, or helm's failure.
 */
export async function renderHelmChart(chartFile: string, sourceDir: string, projectRoot: string, environment: HelmEnvironment): Promise<void> {
  const renderedDir = path.dirname(chartFile);
  const config = await readHelmChartConfig(chartFile);
  const chartDir = await locateChart(config, chartFile, sourceDir, projectRoot);
  const valuesFile = await findProjectFile(renderedDir, 'helm-values');
  const namespace = config.namespace ?? 'default';
  const args = ['template', config.releaseName, chartDir, '--namespace', namespace, '--kube-version', environment.kubeVersion, '--skip-tests'];
  args.push(config.skipCRDs ? '--skip-crds' : '--include-crds');
  if (valuesFile) args.push('--values', valuesFile);
  for (const apiVersion of environment.apiVersions) args.push('--api-versions', apiVersion);
  const { stdout } = await run(toolPath('helm'), args, { env: helmEnv(environment.helmHome) }).catch((error: Error) => {
    throw new Error(`${chartFile}: helm template failed: ${error.message}`);
  });
  const objects = parseYamlDocuments(stdout, `${chartFile} (helm output)`) as KubeObject[];
  if (config.namespace !== undefined) for (const object of objects) annotate(object, HELM_NAMESPACE_ANNOTATION, config.namespace);
  const outputFile = path.join(renderedDir, config.output ?? DEFAULT_HELM_OUTPUT);
  await mkdir(path.dirname(outputFile), { recursive: true });
  await writeFile(outputFile, toYamlDocuments(objects));
}

async function locateChart(config: HelmChartConfig, chartFile: string, sourceDir: string, projectRoot: string): Promise<string> {
  if (config.path !== undefined) {
    const dir = path.resolve(sourceDir, config.path);
    if (!isInside(projectRoot, dir) || !(await isDirectory(dir))) throw new Error(`${chartFile}: local chart '${config.path}' not found`);
    return dir;
  }
  if (config.repo === undefined) throw new Error(`${chartFile}: helmChart needs 'repo' or 'path' (git charts are not supported by this version of Gantry)`);
  if (config.repo.startsWith('oci://')) throw new Error(`${chartFile}: OCI charts are not supported by this version of Gantry`);
  if (!config.chartName || !config.chartVersion) throw new Error(`${chartFile}: 'chartName' and 'chartVersion' are required with 'repo'`);
  const chartsDir = await nearestHelmChartsDir(sourceDir, projectRoot);
  const dir = chartsDir && path.join(chartsDir, pulledChartPath(config.repo, config.chartName), config.chartVersion);
  if (!dir || !(await isDirectory(dir))) {
    throw new Error(`${chartFile}: chart ${config.chartName} ${config.chartVersion} from ${config.repo} is not pre-pulled (expected under .helm-charts/${pulledChartPath(config.repo, config.chartName)}/${config.chartVersion})`);
  }
  return dir;
}

/** `https://charts.bitnami.com/bitnami` + `redis` → `https_charts.bitnami.com/bitnami/redis` (kluctl's pulled chart dir). */
export function pulledChartPath(repo: string, chartName: string): string {
  const url = new URL(repo);
  const scheme = url.protocol.replace(/:$/, '');
  const defaultPort = scheme === 'https' ? '443' : scheme === 'http' ? '80' : '';
  const port = url.port && url.port !== defaultPort ? `_${url.port}` : '';
  const repoPath = url.pathname.toLowerCase().replace(/^\/+|\/+$/g, '');
  return [`${scheme}${port}_${url.hostname.toLowerCase()}`, repoPath, chartName].filter(Boolean).join('/');
}

async function nearestHelmChartsDir(sourceDir: string, projectRoot: string): Promise<string | undefined> {
  for (let dir = sourceDir; isInside(projectRoot, dir); dir = path.dirname(dir)) {
    if (await isDirectory(path.join(dir, '.helm-charts'))) return path.join(dir, '.helm-charts');
    if (dir === projectRoot) break;
  }
  return undefined;
}

function helmEnv(home: string): Record<string, string> {
  return {
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
}

function annotate(object: KubeObject, key: string, value: string): void {
  if (!isPlainObject(object.metadata)) object.metadata = {};
  object.metadata.annotations = { ...object.metadata.annotations, [key]: value };
}
