/**
 * What the engine renders for a service: its folder as a Kluctl project (target, args, and the configuration as
 * args), or, for kustomize and raw YAML, a one-item Kluctl project wrapped around the folder with the service's
 * namespace as overrideNamespace, its `*.liquid` files rendered into the copy, or taken verbatim when the service is
 * not `templated` (liquid-templates.ts; Kluctl projects have their own templating, with the configuration as args); a helm
 * service's tarball is already such a Kluctl project. Either way one engine renders, applies, waits and prunes, with
 * the service's own discriminator, in the agent's own cluster.
 */
import { cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentService } from '../api/agent.ts';
import type { TargetRequest } from '../target/request.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import { renderLiquidTemplates, templateBindings } from './liquid-templates.ts';
import { deepMerge, isPlainObject, type Values } from '../values.ts';
import { isDirectory, relativeSlashPath, resolveInside } from '../files.ts';
import { parseYaml, toYaml } from '../yaml.ts';

/** How the agent renders a service's folder; `renderers`: several folders, each its own way (Plural's renderers). */
export type RendererKind = 'kluctl' | 'kustomize' | 'raw' | 'renderers';

const KLUCTL_PROJECT_FILES = ['.kluctl.yaml', '.kluctl.yml'];
const KLUCTL_DEPLOYMENT_FILES = ['deployment.yaml', 'deployment.yml'];
const KUSTOMIZE_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
/** Kluctl's values file beside a helm-chart.yaml. */
const HELM_VALUES_FILE = 'helm-values.yaml';

/** The label value that marks what a service applied: one discriminator per service, never shared. */
export function serviceDiscriminator(service: { id: string }): string {
  return `${DISCRIMINATOR_PREFIX}${service.id}`;
}

/** The service id a discriminator names, or undefined when it is not a service's (another tool's label value). */
export function serviceIdOf(discriminator: string): string | undefined {
  return discriminator.startsWith(DISCRIMINATOR_PREFIX) ? discriminator.slice(DISCRIMINATOR_PREFIX.length) : undefined;
}

const DISCRIMINATOR_PREFIX = 'gantry-svc-';

/**
 * The renderer a service's folder gets: the one asked for, or the one its files call for (`auto`). A helm service's
 * tarball is a Kluctl project the server built around the pre-pulled chart (server/helm-sources.ts): no target.
 */
export async function rendererFor(service: AgentService, sourceDir: string): Promise<RendererKind> {
  if (service.renderers?.length) return 'renderers';
  if (service.renderer.kind === 'helm') return 'kluctl';
  if (service.renderer.kind !== 'auto') return service.renderer.kind;
  if ((await anyExists(sourceDir, KLUCTL_PROJECT_FILES)) || (await hasKluctlDeployment(sourceDir))) return 'kluctl';
  if (await anyExists(sourceDir, KUSTOMIZE_FILES)) return 'kustomize';
  return 'raw';
}

/**
 * The engine request for the service, writing the wrapper project into `workDir` for kustomize and raw, and the
 * copy of a helm service's project when it has secret values.
 * @throws TemplateError for a Liquid template that cannot be rendered (a render error: nothing is applied).
 * @param context the agent's kubeconfig context: a service deploys to the agent's cluster, whatever its project says.
 */
export async function serviceRequest(
  service: AgentService,
  sourceDir: string,
  renderer: RendererKind,
  workDir: string,
  context: string,
): Promise<TargetRequest> {
  const common = { context, discriminator: serviceDiscriminator(service), inclusion: NO_SELECTION, fixedImages: [] };
  if (renderer === 'kluctl') {
    const hasSecretValues = service.renderer.kind === 'helm' && Object.keys(service.secretValues).length > 0;
    return {
      ...common,
      projectDir: hasSecretValues ? await withSecretValues(service.secretValues, sourceDir, workDir) : sourceDir,
      target: service.renderer.target,
      args: { ...service.renderer.args, ...service.configuration },
    };
  }
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  const copy = path.join(workDir, 'source');
  await cp(sourceDir, copy, { recursive: true });
  await renderLiquidTemplates(copy, templateBindings(service), {
    manifestNames: renderer !== 'kustomize',
    verbatim: service.templated === false,
  });
  const items = renderer === 'renderers' ? await rendererItems(service, workDir) : [{ path: 'source' }];
  const deployment = { deployments: items, overrideNamespace: service.namespace };
  await writeFile(path.join(workDir, 'deployment.yaml'), toYaml(deployment));
  // Jinja2 is the templating of Kluctl projects only: a raw or kustomize folder reaches the engine as Liquid left
  // it, `{{ }}` meant for others (Prometheus rules, Helm values in a ConfigMap) included.
  await writeFile(path.join(workDir, '.templateignore'), '*\n');
  return { ...common, projectDir: workDir, args: {} };
}

type ChartSettings = NonNullable<NonNullable<AgentService['renderers']>[number]['helm']>;

/**
 * One deployment item per renderer of the service, in their order (Plural's renderers): a raw or kustomize folder is
 * an item of its own, as the single renderer's folder is; a chart (kind helm, or auto with a Chart.yaml) gets an item
 * whose helm-chart.yaml names the folder as a local chart, with its valuesFiles (inside the chart folder) and values
 * merged into helm-values.yaml.
 * @throws PathEscapeError for a renderer folder or values file that leads outside the source; Error for a missing
 *   folder or values file (a render error: nothing is applied).
 */
async function rendererItems(service: AgentService, workDir: string): Promise<Array<{ path: string }>> {
  const source = path.join(workDir, 'source');
  const items: Array<{ path: string }> = [];
  for (const [index, renderer] of (service.renderers ?? []).entries()) {
    const where = `renderers[${index}] (${renderer.path})`;
    const folder = await resolveInside(source, renderer.path, { label: where, root: 'the source' });
    if (!(await isDirectory(folder))) throw new Error(`${where}: the folder does not exist in the source`);
    const isChart = renderer.kind === 'helm' || (renderer.kind === 'auto' && (await anyExists(folder, ['Chart.yaml'])));
    if (!isChart) {
      items.push({ path: relativeSlashPath(workDir, folder) });
      continue;
    }
    const itemDir = path.join(workDir, `.renderers`, String(index));
    await mkdir(itemDir, { recursive: true });
    const chart = {
      helmChart: {
        path: path.relative(itemDir, folder).split(path.sep).join('/'),
        releaseName: renderer.helm?.release ?? service.name,
        namespace: service.namespace,
      },
    };
    await writeFile(path.join(itemDir, 'helm-chart.yaml'), toYaml(chart));
    await writeFile(path.join(itemDir, HELM_VALUES_FILE), toYaml(await chartValues(source, folder, renderer.helm, where)));
    items.push({ path: relativeSlashPath(workDir, itemDir) });
  }
  return items;
}

/**
 * A chart renderer's valuesFiles in order, then its values over them, as Helm merges -f and --set. A values file is
 * relative to the chart folder and may be anywhere in the source (a chart from git reads the service's own folder).
 */
async function chartValues(source: string, folder: string, helm: ChartSettings | undefined, where: string): Promise<Values> {
  let values: Values = {};
  for (const name of helm?.valuesFiles ?? []) {
    const file = await resolveInside(source, name, { base: folder, label: `${where}: values file`, root: 'the source' });
    const text = await readFile(file, 'utf8').catch(() => {
      throw new Error(`${where}: values file ${JSON.stringify(name)} does not exist in the source`);
    });
    const parsed = parseYaml(text, name) ?? {};
    if (!isPlainObject(parsed)) throw new Error(`${where}: values file ${JSON.stringify(name)} is not a YAML mapping`);
    values = deepMerge(values, parsed);
  }
  return deepMerge(values, helm?.values ?? {});
}

/**
 * A copy of a helm service's wrapper project (server/helm-sources.ts: one item, the chart and its helm-values.yaml)
 * in `workDir` with the secret values merged over the item's values. They reach only this copy, never the tarball
 * or the source cache.
 */
async function withSecretValues(secretValues: Values, sourceDir: string, workDir: string): Promise<string> {
  await rm(workDir, { recursive: true, force: true });
  await cp(sourceDir, workDir, { recursive: true });
  const deployment = parseYaml(await readFile(path.join(workDir, 'deployment.yaml'), 'utf8'), 'deployment.yaml') as {
    deployments: Array<{ path: string }>;
  };
  const valuesFile = path.join(workDir, deployment.deployments[0]!.path, HELM_VALUES_FILE);
  const values = (parseYaml(await readFile(valuesFile, 'utf8'), HELM_VALUES_FILE) ?? {}) as Values;
  await writeFile(valuesFile, toYaml(deepMerge(values, secretValues)));
  return workDir;
}

/**
 * Whether the folder's deployment.yaml is Kluctl's (deployments, vars, …) rather than a Kubernetes Deployment
 * manifest that happens to have that name, as raw folders often do.
 */
async function hasKluctlDeployment(dir: string): Promise<boolean> {
  for (const name of KLUCTL_DEPLOYMENT_FILES) {
    const text = await readFile(path.join(dir, name), 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    try {
      const document = parseYaml(text, name) as Record<string, unknown> | null;
      return typeof document === 'object' && document !== null && !('kind' in document) && !('apiVersion' in document);
    } catch {
      return true; // Kluctl's own render will name the YAML error.
    }
  }
  return false;
}

async function anyExists(dir: string, names: readonly string[]): Promise<boolean> {
  for (const name of names) if (await stat(path.join(dir, name)).catch(() => undefined)) return true;
  return false;
}
