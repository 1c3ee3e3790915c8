/**
 * A service's spec from what a request gives (a service, a service update merged over the current spec, or a
 * global service's template), checked for the combinations the API allows: a repository's folder
 * (`repository` + `git`), a Helm chart (`helm`), or a chart whose valuesFiles come from a git folder (all three,
 * as Plural's helm+git services), with more git folders (`sources`) and a renderer per folder (`renderers`) beside a
 * repository's folder. Errors are 400s naming the request's field.
 */
import { posix } from 'node:path';
import type { ExtraSource, HelmSpec, PathRenderer, Renderer, ServiceSpec, SyncConfig } from '../store/services.ts';
import { isInside } from '../files.ts';
import { HttpError } from '../http/errors.ts';
import type { ServiceSources } from './service-sources.ts';

/** The source and renderer fields of a request, as given (helm may be partial after merging an update). */
export interface SourceInput {
  namespace: string;
  repository?: string;
  git?: { ref?: string; folder?: string };
  helm?: Partial<HelmSpec>;
  renderer?: Renderer;
  /** Names of existing service contexts (checkedContexts in routes/contexts.ts). */
  contexts?: string[];
  syncConfig?: SyncConfig;
  templated?: boolean;
  version?: string | undefined;
  docsPath?: string | undefined;
  /** Extra git sources, each repository by id or URL (Plural's sources). */
  sources?: Array<{ path: string; repository: string; git: { ref: string; folder: string } }> | undefined;
  renderers?: PathRenderer[] | undefined;
}

/**
 * The checked spec. The renderer of a helm source is `helm` (`auto` or none become it), of a git one `auto` by default; the
 * release defaults to `name`.
 * @param prefix where the request holds these fields: `body` or `body.template`.
 * @throws HttpError 400 naming the field of a missing or conflicting part, or of an unregistered repository.
 */
export async function checkedSpec(sources: ServiceSources, input: SourceInput, name: string, prefix: string): Promise<ServiceSpec> {
  const { helm, git, repository } = input;
  const fail = (field: string, message: string): never => {
    throw new HttpError(400, message, `${prefix}.${field}`);
  };
  if (git && repository === undefined) fail('repository', 'git needs the repository it is a folder of');
  if (repository !== undefined && !git) fail('git', 'a repository needs git: {ref, folder}');
  if (!helm && !git) fail('git', 'a service needs a source: repository and git, or helm');
  if (git?.ref === undefined && git) fail('git.ref', 'git needs a ref');
  if (helm && git && !helm.valuesFiles?.length)
    fail('git', 'with helm, git only holds helm.valuesFiles: give valuesFiles or leave git and repository out');
  if (helm?.valuesFiles?.length && !git) fail('helm.valuesFiles', 'valuesFiles are read from a git folder: give repository and git');
  const renderer = checkedRenderer(input.renderer, helm !== undefined, prefix);
  const spec: ServiceSpec = { namespace: input.namespace, renderer };
  if (git && repository !== undefined) {
    spec.repositoryId = (await sources.registeredRepository(repository, `${prefix}.repository`)).id;
    spec.git = { ref: git.ref as string, folder: git.folder ?? '' };
  }
  if (helm) spec.helm = completeHelm(helm, name, prefix);
  // Left out when empty: see ServiceSpec.contexts.
  if (input.contexts?.length) spec.contexts = input.contexts;
  if (input.syncConfig && Object.keys(input.syncConfig).length > 0) spec.syncConfig = input.syncConfig;
  if (input.templated === false) spec.templated = false;
  if (input.version) spec.version = input.version;
  if (input.docsPath) spec.docsPath = input.docsPath;
  if (input.sources?.length) spec.sources = await checkedSources(sources, input, prefix);
  if (input.renderers?.length) spec.renderers = checkedRenderers(input, prefix);
  return spec;
}

/**
 * Extra sources go with the service's own git folder, at the root of the combined source, each at a folder of its own.
 * @throws HttpError 400 naming `<prefix>.sources…` for a helm service, two sources at one path, or an unregistered repository.
 */
async function checkedSources(sources: ServiceSources, input: SourceInput, prefix: string): Promise<ExtraSource[]> {
  const given = input.sources ?? [];
  if (!input.git || input.helm)
    throw new HttpError(
      400,
      "sources are packed beside the service's own git folder: give repository and git, not helm",
      `${prefix}.sources`,
    );
  const checked: ExtraSource[] = [];
  for (const [index, source] of given.entries()) {
    const path = posix.normalize(source.path).replace(/\/+$/, '');
    const clash = checked.findIndex((other) => isInside(other.path, path) || isInside(path, other.path));
    if (clash >= 0)
      throw new HttpError(
        400,
        `path ${JSON.stringify(path)} overlaps sources[${clash}]'s ${JSON.stringify(checked[clash]!.path)}`,
        `${prefix}.sources.${index}.path`,
      );
    const repository = await sources.registeredRepository(source.repository, `${prefix}.sources.${index}.repository`);
    checked.push({ path, repositoryId: repository.id, git: { ref: source.git.ref, folder: source.git.folder } });
  }
  return checked;
}

/**
 * Renderers take the place of the single renderer, for a git source (a chart in one of its folders is a helm renderer).
 * @throws HttpError 400 naming `<prefix>.renderers…` for a helm service, a renderer besides them, or helm settings
 *   on a raw or kustomize renderer.
 */
function checkedRenderers(input: SourceInput, prefix: string): PathRenderer[] {
  if (!input.git || input.helm)
    throw new HttpError(400, 'renderers render folders of a git source: give repository and git, not helm', `${prefix}.renderers`);
  if (input.renderer && input.renderer.kind !== 'auto')
    throw new HttpError(400, `give renderers or renderer ${input.renderer.kind}, not both`, `${prefix}.renderer`);
  return (input.renderers ?? []).map((renderer, index) => {
    if (renderer.helm && (renderer.kind === 'raw' || renderer.kind === 'kustomize'))
      throw new HttpError(
        400,
        `helm settings are for a chart: kind helm or auto, not ${renderer.kind}`,
        `${prefix}.renderers.${index}.helm`,
      );
    return { ...renderer, path: posix.normalize(renderer.path || '.').replace(/(.)\/+$/, '$1') };
  });
}

/** @throws HttpError 400 naming `<prefix>.secretValues` when they are given to a service without a chart. */
export function checkSecretValues(spec: ServiceSpec, secretValues: Record<string, unknown> | undefined, prefix: string): void {
  if (!spec.helm && secretValues && Object.keys(secretValues).length > 0) {
    throw new HttpError(400, 'secretValues are helm values: the service needs helm', `${prefix}.secretValues`);
  }
}

/** A helm source with every required part (an update may have merged a partial one). */
function completeHelm(helm: Partial<HelmSpec>, name: string, prefix: string): HelmSpec {
  for (const field of ['url', 'chart', 'version'] as const) {
    if (!helm[field]) throw new HttpError(400, `helm needs ${field}`, `${prefix}.helm.${field}`);
  }
  return {
    url: helm.url as string,
    chart: helm.chart as string,
    version: helm.version as string,
    ...(helm.values ? { values: helm.values } : {}),
    ...(helm.valuesFiles?.length ? { valuesFiles: helm.valuesFiles } : {}),
    release: helm.release ?? name,
    ...(helm.ignoreHooks ? { ignoreHooks: true } : {}),
    ...(helm.ignoreCrds ? { ignoreCrds: true } : {}),
  };
}

/** Kluctl's target and args belong to the kluctl renderer only; `helm` to helm sources, which take no other. */
function checkedRenderer(renderer: Renderer | undefined, isHelm: boolean, prefix: string): Renderer {
  const extra = renderer as { target?: unknown; args?: unknown } | undefined;
  if (renderer && renderer.kind !== 'kluctl' && (extra?.target !== undefined || extra?.args !== undefined)) {
    throw new HttpError(400, `target and args apply to the kluctl renderer, not ${renderer.kind}`, `${prefix}.renderer`);
  }
  if (isHelm) {
    // `auto` decides by the source, and a chart is rendered by helm.
    if (renderer && renderer.kind !== 'helm' && renderer.kind !== 'auto')
      throw new HttpError(400, `a helm source is rendered by helm, not ${renderer.kind}`, `${prefix}.renderer`);
    return { kind: 'helm' };
  }
  if (renderer?.kind === 'helm') throw new HttpError(400, 'the helm renderer needs a helm source', `${prefix}.helm`);
  return renderer ?? { kind: 'auto' };
}
