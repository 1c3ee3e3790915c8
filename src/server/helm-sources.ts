/**
 * Helm charts as service sources (Plural's ServiceDeployment helm spec: url, chart, version, values, valuesFiles).
 * The server resolves the version, pulls the chart with the engine's pull code into its chart cache, and packs a
 * tiny Kluctl project around it: `deployment.yaml` with one item holding `helm-chart.yaml` and `helm-values.yaml`,
 * and the chart pre-pulled in the `.helm-charts` layout the engine reads. So the agent renders it with the same
 * engine as any Kluctl project, never reaches a chart registry, and the tarball's digest covers the chart's bytes.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RegistryChartSource } from '../helm/chart-config.ts';
import type { ChartTools } from '../helm/helm-cli.ts';
import { HELM_CHARTS_DIR, versionDir } from '../helm/layout.ts';
import { pullCached } from '../helm/pull.ts';
import { availableVersions } from '../helm/versions.ts';
import { newestVersion } from '../semver.ts';
import type { HelmCredentials } from '../store/helm-repositories.ts';
import type { HelmSpec } from '../store/services.ts';
import { deepMerge, isPlainObject, type Values } from '../values.ts';
import { parseYaml, toYaml } from '../yaml.ts';
import { PathEscapeError, resolveInside } from '../files.ts';
import { HttpError } from '../http/errors.ts';
import type { TarballStore } from './tarballs.ts';

/** `x.y.z` with optional pre-release and build: a version, not a range, so it never moves and is not polled. */
export function isExactVersion(version: string): boolean {
  return /^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(version);
}

/**
 * The engine's chart source for the spec: for oci:// the chart is the last part of the registry path (Kluctl's
 * form), for a Helm repository it is named beside the URL.
 */
export function chartSourceOf(helm: HelmSpec, version: string, credentials?: HelmCredentials): RegistryChartSource {
  const url = helm.url.replace(/\/+$/, '');
  return url.startsWith('oci://')
    ? { kind: 'oci', repo: `${url}/${helm.chart}`, chartName: helm.chart, version }
    : { kind: 'helm-repo', repo: url, chartName: helm.chart, version, ...(credentials ? { credentials } : {}) };
}

/**
 * The chart version `helm.version` names: itself when the chart has it, else the newest version the range allows
 * (pre-releases only when the range names one, as Helm and Kluctl pick).
 * @param field the request's name of the helm source, e.g. `body.helm`.
 * @throws HttpError 400 naming `<field>.url` when the repository cannot be read, `.chart` when it has no such
 *   chart, `.version` when the version is not a version or range, or nothing matches it.
 */
export async function resolveChartVersion(
  helm: HelmSpec,
  charts: ChartTools,
  field: string,
  credentials?: HelmCredentials,
): Promise<string> {
  const versions = await availableVersions(chartSourceOf(helm, '', credentials), charts.git, charts.egress).catch((error: Error) => {
    throw new HttpError(400, `chart ${helm.chart} cannot be listed: ${error.message}`, listingField(error, helm, field));
  });
  if (versions.includes(helm.version)) return helm.version;
  let newest: string | undefined;
  try {
    newest = newestVersion(versions, helm.version);
  } catch (error) {
    throw new HttpError(400, `${JSON.stringify(helm.version)} is not a version or range: ${(error as Error).message}`, `${field}.version`);
  }
  if (newest === undefined) {
    const known = versions.slice(0, 10).join(', ') || 'none';
    throw new HttpError(
      400,
      `chart ${helm.chart} has no version matching ${JSON.stringify(helm.version)} (versions: ${known}${versions.length > 10 ? ', …' : ''})`,
      `${field}.version`,
    );
  }
  return newest;
}

/** A listing that reached the repository but found no chart is the chart's fault, anything else the URL's. */
function listingField(error: Error, helm: HelmSpec, field: string): string {
  const noChart = /has no chart/.test(error.message) || (helm.url.startsWith('oci://') && /answered 404/.test(error.message));
  return noChart ? `${field}.chart` : `${field}.url`;
}

/** What the wrapper project is made of, besides the chart itself. */
export interface HelmProjectInput {
  helm: HelmSpec;
  /** The resolved chart version. */
  chartVersion: string;
  namespace: string;
  /** The git folder valuesFiles are read from, when the spec has them. */
  valuesDir?: string;
  /** Of the chart repository, when the server has them. */
  credentials?: HelmCredentials;
}

/**
 * Pulls the chart (into the server's chart cache, once per version), builds the wrapper project and packs it.
 * @returns the tarball's sha256.
 * @throws HttpError 400 naming `<field>.version` when the version cannot be pulled, `<field>.valuesFiles` when a
 *   values file is missing, leaves the folder or is not a YAML mapping.
 */
export async function packHelmProject(input: HelmProjectInput, charts: ChartTools, tarballs: TarballStore, field: string): Promise<string> {
  const source = chartSourceOf(input.helm, input.chartVersion, input.credentials);
  const values = await mergedValues(input, field);
  const chartDir = await pullCached(source, charts).catch((error: Error) => {
    throw new HttpError(400, error.message, `${field}.version`);
  });
  const projectDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-helm-service-'));
  try {
    await writeHelmProject(projectDir, input, values);
    await cp(chartDir, versionDir(source, path.join(projectDir, HELM_CHARTS_DIR)), { recursive: true });
    return await tarballs.pack(projectDir);
  } finally {
    await rm(projectDir, { recursive: true, force: true });
  }
}

/**
 * deployment.yaml (one item, the service's namespace for objects without one, as the agent's wrappers do), the
 * item's helm-chart.yaml (Kluctl's fields, and Gantry's skipHooks for ignoreHooks) and helm-values.yaml. The values are excluded from Jinja2 templating
 * (`.templateignore`): they reach Helm as given, `{{ }}` in them included, as Plural passes helm values.
 */
async function writeHelmProject(projectDir: string, input: HelmProjectInput, values: Values): Promise<void> {
  const source = chartSourceOf(input.helm, input.chartVersion);
  const itemDir = path.join(projectDir, input.helm.release);
  const chart = {
    helmChart: {
      repo: source.repo,
      ...(source.kind === 'helm-repo' ? { chartName: source.chartName } : {}),
      chartVersion: input.chartVersion,
      releaseName: input.helm.release,
      namespace: input.namespace,
      ...(input.helm.ignoreCrds ? { skipCRDs: true } : {}),
      ...(input.helm.ignoreHooks ? { skipHooks: true } : {}),
    },
  };
  await writeFile(
    path.join(projectDir, 'deployment.yaml'),
    toYaml({ deployments: [{ path: input.helm.release }], overrideNamespace: input.namespace }),
  );
  await mkdir(itemDir, { recursive: true });
  await writeFile(path.join(itemDir, 'helm-chart.yaml'), toYaml(chart));
  await writeFile(path.join(itemDir, 'helm-values.yaml'), toYaml(values));
  await writeFile(path.join(itemDir, '.templateignore'), 'helm-values.yaml\n');
}

/** valuesFiles in order, then `values` over them (Helm's -f … --set order). */
async function mergedValues(input: HelmProjectInput, field: string): Promise<Values> {
  let merged: Values = {};
  for (const [index, file] of (input.helm.valuesFiles ?? []).entries()) {
    merged = deepMerge(merged, await readValuesFile(input.valuesDir ?? '', file, `${field}.valuesFiles.${index}`));
  }
  return deepMerge(merged, input.helm.values ?? {});
}

async function readValuesFile(dir: string, file: string, field: string): Promise<Values> {
  const full = await resolveInside(dir, file, { label: 'values file', root: 'the git folder' }).catch((error: unknown) => {
    throw error instanceof PathEscapeError ? new HttpError(400, error.message, field) : error;
  });
  const text = await readFile(full, 'utf8').catch(() => {
    throw new HttpError(400, `values file ${JSON.stringify(file)} does not exist in the git folder`, field);
  });
  let values: unknown;
  try {
    values = parseYaml(text, file) ?? {};
  } catch (error) {
    throw new HttpError(400, (error as Error).message, field);
  }
  if (!isPlainObject(values)) throw new HttpError(400, `values file ${JSON.stringify(file)} is not a YAML mapping`, field);
  return values;
}
