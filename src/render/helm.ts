/**
 * Helm charts in deployment items, as kluctl's helm docs define them: a `helm-chart.yaml` (with a rendered
 * `helm-values.yaml` beside it) is rendered by `helm template` into its `output` file, which kustomize then picks
 * up. Where the chart's files come from is src/helm/locate.ts. Helm hook annotations stay as they are; the deploy
 * runs them as Kluctl hooks (src/deploy/hooks.ts).
 * With a cluster, charts' `lookup` calls read it (`--dry-run=server`, everything else stays client-side, as
 * Kluctl's server dry run does); offline they see nothing, as `helm template` does. Helm's own check of the output
 * against the cluster's OpenAPI schema is off, as in Kluctl's render (a client-only install): it costs ~0.25 s per
 * chart, and the API server validates every object when it is applied anyway.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseYamlDocuments, toYamlDocuments } from '../yaml.ts';
import { assertLinksInside, findProjectFile, isInside, PathEscapeError, relativeSlashPath, resolveInside } from '../files.ts';
import { isPlainObject } from '../values.ts';
import type { KubeObject } from '../kube/object.ts';
import { chartSourceOf, DEFAULT_HELM_OUTPUT, readHelmChartConfig, type HelmChartConfig } from '../helm/chart-config.ts';
import { locateChart } from '../helm/locate.ts';
import { runHelm, type ChartTools } from '../helm/helm-cli.ts';
import type { RenderInputs } from '../project/render-inputs.ts';
import { HELM_READS_CONTEXT, type HelmReadsProxy } from './helm-reads.ts';
import { messageOf } from '../problems.ts';

export { DEFAULT_HELM_OUTPUT, readHelmChartConfig };

/** Marks objects whose namespace defaults to the release namespace (kluctl's annotation of the same meaning). */
export const HELM_NAMESPACE_ANNOTATION = 'kluctl.io/helm-install-namespace';

export interface HelmEnvironment {
  /** Kubernetes version charts are rendered for (`v1.35.4`). */
  kubeVersion: string;
  /** group/version and group/version/Kind strings the cluster serves; empty when rendering offline. */
  apiVersions: readonly string[];
  /** Scratch folder for helm's own config/cache/data, so no user configuration leaks in. */
  helmHome: string;
  /** helm, git, and the cache of charts pulled on demand. */
  charts: ChartTools;
  /** The cluster `lookup` reads, as helm's flags name it; undefined when rendering offline. */
  kube?: { kubeconfig: string | undefined; context: string } | undefined;
  /** Told of charts whose content may change under the same configuration. */
  inputs?: RenderInputs | undefined;
  /** With a cluster: Helm reads it through this proxy instead of `kube`, which records what it read. */
  reads?: HelmReadsProxy | undefined;
  signal?: AbortSignal;
}

/**
 * Renders the chart configured in `<renderedDir>/helm-chart.yaml` into `<renderedDir>/<output>`, and returns that
 * file with the objects written to it.
 * @param sourceDir the helm-chart.yaml's folder in the project (`.helm-charts` and local chart paths are resolved
 *   from there).
 * @param projectRoot root of the project (or git include) the chart file belongs to.
 * @throws Error naming the helm-chart.yaml (relative to `projectRoot`) for an invalid file, a missing or stale
 *   chart, or helm's failure.
 */
export async function renderHelmChart(
  chartFile: string,
  sourceDir: string,
  projectRoot: string,
  environment: HelmEnvironment,
): Promise<{ file: string; objects: KubeObject[] }> {
  const renderedDir = path.dirname(chartFile);
  const shownAs = relativeSlashPath(projectRoot, path.join(sourceDir, path.basename(chartFile)));
  const config = await readHelmChartConfig(chartFile, shownAs);
  const outputFile = path.resolve(renderedDir, config.output ?? DEFAULT_HELM_OUTPUT);
  if (!isInside(renderedDir, outputFile)) throw new Error(`${shownAs}: output '${config.output}' leaves the chart's folder`);
  const source = chartSourceOf(config, shownAs, sourceDir, projectRoot);
  if (source.kind === 'local') await confineLocalChart(config.path!, sourceDir, projectRoot, shownAs);
  if (source.kind === 'git' && config.skipPrePull && source.ref.commit === undefined)
    environment.inputs?.cannotReuse(`${shownAs}: a chart pulled from a git branch or tag at each render`);
  const chartDir = await locateChart(source, config.skipPrePull ?? false, sourceDir, projectRoot, environment.charts).catch(
    (error: unknown) => {
      throw new Error(`${shownAs}: ${messageOf(error)}`);
    },
  );
  const session = environment.kube && (await environment.reads?.session());
  const kube = session ? { kubeconfig: session.kubeconfig, context: HELM_READS_CONTEXT } : environment.kube;
  const args = await templateArgs(config, chartDir, renderedDir, { ...environment, kube });
  const { stdout } = await runHelm(environment.charts.tools, args, environment.helmHome, environment.signal).catch((error: unknown) => {
    if (environment.signal?.aborted) throw error;
    throw new Error(`${shownAs}: helm template failed: ${messageOf(error)}`);
  });
  const objects = parseYamlDocuments(stdout, `${shownAs} (helm output)`) as KubeObject[];
  await session?.finish(objects, config.namespace ?? 'default');
  if (config.namespace !== undefined) for (const object of objects) annotate(object, HELM_NAMESPACE_ANNOTATION, config.namespace);
  await mkdir(path.dirname(outputFile), { recursive: true });
  await writeFile(outputFile, toYamlDocuments(objects));
  return { file: outputFile, objects };
}

/**
 * `helm template` as Kluctl's render calls Helm's install action: CRDs included unless skipCRDs, no test hooks (no
 * hooks at all with Gantry's skipHooks), and
 * taking ownership of existing objects (with a cluster, Helm 4's server dry run would otherwise refuse objects
 * Gantry applied, which carry no Helm release metadata).
 */
/**
 * A local chart's folder, with symlinks followed, and every symlink in it must lead inside the project: helm reads
 * the chart's files through its links (`.Files.Get`), so one leading out would render the host's files.
 * @throws PathEscapeError naming the helm-chart.yaml and the link that leads out.
 */
async function confineLocalChart(written: string, sourceDir: string, projectRoot: string, shownAs: string): Promise<void> {
  const dir = await resolveInside(projectRoot, written, { base: sourceDir, label: `${shownAs}: path`, root: 'the project' });
  await assertLinksInside(dir, 'the project', projectRoot).catch((error: Error) => {
    throw new PathEscapeError(`${shownAs}: local chart '${written}': ${error.message}`);
  });
}

async function templateArgs(
  config: HelmChartConfig,
  chartDir: string,
  renderedDir: string,
  environment: HelmEnvironment,
): Promise<string[]> {
  const args = [
    'template',
    config.releaseName,
    chartDir,
    '--namespace',
    config.namespace ?? 'default',
    '--kube-version',
    environment.kubeVersion,
    '--skip-tests',
    '--take-ownership',
  ];
  args.push(config.skipCRDs ? '--skip-crds' : '--include-crds');
  if (config.skipHooks) args.push('--no-hooks');
  const valuesFile = await findProjectFile(renderedDir, 'helm-values');
  if (valuesFile) args.push('--values', valuesFile);
  for (const apiVersion of environment.apiVersions) args.push('--api-versions', apiVersion);
  if (environment.kube) {
    args.push('--dry-run=server', '--disable-openapi-validation', '--kube-context', environment.kube.context);
    if (environment.kube.kubeconfig) args.push('--kubeconfig', environment.kube.kubeconfig);
  }
  return args;
}

function annotate(object: KubeObject, key: string, value: string): void {
  if (!isPlainObject(object.metadata)) object.metadata = {};
  object.metadata.annotations = { ...object.metadata.annotations, [key]: value };
}
