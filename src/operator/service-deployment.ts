/**
 * ServiceDeployment → a service on the cluster its clusterRef (a Cluster resource) or `cluster` (a server cluster's
 * handle) names (Plural's servicedeployment_controller.go): the service `spec.name` (default metadata.name) of that
 * cluster in `spec.namespace` (default the resource's), sourced from the repositoryRef's folder or a Helm chart, with
 * `configuration` and the keys of the `configurationRef` Secret over it. `reconciliation` is its agent's drift
 * detection: `driftDetection: false` is `syncConfig.selfHeal: false`, `interval` its resync interval. A service of that name made
 * elsewhere is adopted read-only. Its revision, applied revision, errors and components are mirrored into status.
 * Deleting the resource deletes the service, whose agent removes its objects; with `detach` or `protect` the service
 * is forgotten and its objects stay.
 */
import path from 'node:path';
import type { ApiService, FleetClient } from '../client/fleet-client.ts';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  ServiceDeploymentSpecSchema,
  type ServiceDeploymentSpec,
  type ServiceDeploymentStatus,
  type ServiceTemplate,
} from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { NewServiceBody } from '../api/services.ts';
import { type FleetKind, InvalidSpec, type ReconciliationSettings, Waiting } from './fleet-object.ts';
import { fluxHelmRepositoryUrl, fluxRepository, isFluxRef } from './flux-source.ts';
import { notFound } from './git-repository.ts';
import { deepMerge, isPlainObject, type Values } from '../values.ts';
import { parseYaml } from '../yaml.ts';
import { checkHandleInNamespace, configMapKeyOf, referencedId, secretOf } from './references.ts';

const CLUSTER = { group: FLEET_GROUP, version: FLEET_VERSION, kind: 'Cluster', namespaced: true };
const GIT_REPOSITORY = { group: FLEET_GROUP, version: FLEET_VERSION, kind: 'GitRepository', namespaced: false };

interface Source {
  repository: string;
  /** The ref of a Flux GitRepository's spec.ref. */
  ref?: string;
}

type RepositoryRef = NonNullable<ServiceTemplate['repositoryRef']>;
type PathRenderer = NonNullable<NewServiceBody['renderers']>[number];
type ExtraSource = NonNullable<NewServiceBody['sources']>[number];

/** Where a chart from git goes beside the service's own git folder (Plural's helm.git with git). */
const CHART_PATH = '.chart';

/** A chart from git: the service's own source, or an extra one; and the helm renderer of its folder. */
interface ChartFromGit {
  own?: { repository: string; git: { ref: string; folder: string } };
  source?: ExtraSource;
  renderer: PathRenderer;
}

/** A service's body without what only a ServiceDeployment has (dependencies, protect). */
export type TemplateBody = Omit<NewServiceBody, 'dependencies' | 'protect'>;

interface DesiredService {
  /** The server's cluster name the service is on; `body` is what the server gets. */
  attributes: { cluster: string; body: NewServiceBody };
}

/**
 * The server's repository a GitRepository reference (Gantry's or Flux's) names.
 * @throws Waiting for a referent that is missing or not synced.
 */
async function repositoryOfRef(
  client: FleetClient,
  cluster: Cluster,
  ref: RepositoryRef,
  namespace: string,
  field: string,
): Promise<Source> {
  if (isFluxRef(ref)) return await fluxRepository(cluster, client, ref, namespace);
  return { repository: await referencedId(cluster, ref, GIT_REPOSITORY, namespace, field) };
}

/**
 * Resolves a service template (a ServiceDeployment's spec, a GlobalService's template) into the server's body: its
 * repositoryRef (Gantry's or Flux's) and configurationRef read, `namespace` the referring resource's.
 * @throws Waiting for a referent that is missing or not synced; InvalidSpec for combinations no server accepts.
 */
export function serviceTemplateResolver(client: FleetClient, cluster: Cluster) {
  async function sourceOf(template: ServiceTemplate, namespace: string): Promise<Source | undefined> {
    return template.repositoryRef && (await repositoryOfRef(client, cluster, template.repositoryRef, namespace, 'spec.repositoryRef'));
  }
  /**
   * A chart from git (Plural's helm.repositoryRef + helm.git) as the server takes it: the chart's folder is the
   * service's source, or, beside the service's own git folder, an extra source at CHART_PATH; a helm renderer renders
   * it with the values (the ConfigMap's under `values`) and valuesFiles (in the service's git folder, as Plural reads them).
   * @throws InvalidSpec for half a chart from git, one with url or repository too, or with valuesFrom (a Secret's values
   *   would be stored in clear in the service's spec).
   */
  async function chartFromGit(template: ServiceTemplate, namespace: string, release: string): Promise<ChartFromGit | undefined> {
    const helm = template.helm;
    if (!helm?.git && !helm?.repositoryRef) return undefined;
    if (!helm.git || !helm.repositoryRef) throw new InvalidSpec('a chart from git needs both spec.helm.repositoryRef and spec.helm.git');
    if (helm.url || helm.repository)
      throw new InvalidSpec('give spec.helm.url, spec.helm.repository or spec.helm.git (a chart from git), not several');
    if (helm.valuesFrom)
      throw new InvalidSpec(
        'spec.helm.valuesFrom with a chart from git is not supported yet: give values, valuesFiles or valuesConfigMapRef',
      );
    const { repository } = await repositoryOfRef(client, cluster, helm.repositoryRef, namespace, 'spec.helm.repositoryRef');
    const git = { ref: helm.git.ref, folder: helm.git.folder };
    const ownGit = template.git !== undefined;
    const values = (await referencedValuesOf({ ...helm, valuesFrom: undefined }, namespace)) ?? (helm.values as Values | undefined);
    const valuesFiles = helm.valuesFiles?.map((file) => (ownGit ? path.posix.join('..', file) : file));
    const renderer = {
      path: ownGit ? CHART_PATH : '.',
      kind: 'helm' as const,
      helm: { ...(values ? { values } : {}), ...(valuesFiles?.length ? { valuesFiles } : {}), release: helm.release ?? release },
    };
    return ownGit ? { source: { path: CHART_PATH, repository, git }, renderer } : { own: { repository, git }, renderer };
  }
  /** The chart repository URL: helm.url, or the Flux HelmRepository helm.repository names. */
  async function helmUrlOf(helm: ServiceTemplate['helm'], namespace: string): Promise<string | undefined> {
    if (!helm?.repository) return helm?.url;
    if (helm.url) throw new InvalidSpec('give spec.helm.url or spec.helm.repository, not both');
    return await fluxHelmRepositoryUrl(cluster, helm.repository, namespace);
  }
  /**
   * The values of helm.valuesConfigMapRef, then of each key of the helm.valuesFrom Secret, with `values` over them
   * (Plural's order); undefined without either reference. They go to the server as secretValues, sealed: it merges
   * them over the rest, so `values` is laid over them here to keep it on top.
   */
  async function referencedValuesOf(helm: ServiceTemplate['helm'], namespace: string): Promise<Values | undefined> {
    if (!helm?.valuesFrom && !helm?.valuesConfigMapRef) return undefined;
    let merged: Values = {};
    if (helm.valuesConfigMapRef) {
      const field = 'spec.helm.valuesConfigMapRef';
      const text = await configMapKeyOf(cluster, helm.valuesConfigMapRef, namespace, field);
      if (text !== undefined) {
        const where = `ConfigMap ${namespace}/${helm.valuesConfigMapRef.name} key ${helm.valuesConfigMapRef.key} (${field})`;
        merged = deepMerge(merged, valuesIn(text, where));
      }
    }
    if (helm.valuesFrom) {
      const field = 'spec.helm.valuesFrom';
      const data = await secretOf(cluster, helm.valuesFrom, namespace, field);
      const where = `Secret ${helm.valuesFrom.namespace ?? namespace}/${helm.valuesFrom.name}`;
      for (const key of Object.keys(data).sort()) merged = deepMerge(merged, valuesIn(data[key]!, `${where} key ${key} (${field})`));
    }
    return deepMerge(merged, (helm.values as Values | undefined) ?? {});
  }
  return async (
    template: ServiceTemplate,
    defaultName: string,
    namespace: string,
    reconciliation?: ReconciliationSettings,
  ): Promise<TemplateBody> => {
    const source = await sourceOf(template, namespace);
    const configuration = {
      ...template.configuration,
      ...(template.configurationRef ? await secretOf(cluster, template.configurationRef, namespace, 'spec.configurationRef') : {}),
    };
    const fromGit = await chartFromGit(template, namespace, template.name ?? defaultName);
    if (fromGit) {
      const { helm: _chart, ...rest } = template;
      const own = fromGit.own;
      const body = serviceBody(
        own ? { ...rest, git: own.git } : rest,
        { name: defaultName, namespace },
        own ?? source,
        configuration,
        undefined,
        reconciliation,
      );
      return { ...body, ...(fromGit.source ? { sources: [fromGit.source] } : {}), renderers: [fromGit.renderer] };
    }
    const helmUrl = await helmUrlOf(template.helm, namespace);
    const body = serviceBody(template, { name: defaultName, namespace }, source, configuration, helmUrl, reconciliation);
    const secretValues = await referencedValuesOf(template.helm, namespace);
    return secretValues ? { ...body, secretValues } : body;
  };
}

export function serviceDeploymentKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<ServiceDeploymentSpec, ServiceDeploymentStatus, DesiredService, ApiService> {
  const resolveTemplate = serviceTemplateResolver(client, cluster);
  /**
   * The server's name of the cluster the service runs on: `cluster` is a server cluster's handle (Plural's), confined
   * as a clusterRef is (checkHandleInNamespace), clusterRef a Cluster resource.
   * @throws InvalidSpec for both or neither, or a handle of another namespace; Waiting until the cluster is in the server.
   */
  async function clusterNameOf(spec: ServiceDeploymentSpec, namespace: string): Promise<string> {
    if (spec.cluster && spec.clusterRef) throw new InvalidSpec('give spec.cluster (a handle) or spec.clusterRef, not both');
    if (spec.cluster) {
      await checkHandleInNamespace(cluster, spec.cluster, namespace, 'spec.cluster');
      const found = (await client.listClusters()).find((candidate) => candidate.handle === spec.cluster);
      if (!found) throw new Waiting(`the server has no cluster with handle ${spec.cluster} (spec.cluster)`);
      return found.name;
    }
    if (!spec.clusterRef) throw new InvalidSpec('spec.clusterRef (a Cluster resource) or spec.cluster (a handle) is required');
    const clusterId = await referencedId(cluster, spec.clusterRef, CLUSTER, namespace, 'spec.clusterRef');
    const clusterName = (await client.listClusters()).find((c) => c.id === clusterId)?.name;
    if (!clusterName) throw new Waiting(`the server has no cluster ${clusterId} (spec.clusterRef ${spec.clusterRef.name})`);
    return clusterName;
  }
  /**
   * spec.sources as the server takes them, each repositoryRef (Gantry's or Flux's) resolved.
   * @throws InvalidSpec naming the source without a path, repositoryRef or git; Waiting for a repository not synced yet.
   */
  async function extraSourcesOf(spec: ServiceDeploymentSpec, namespace: string): Promise<ExtraSource[]> {
    const sources: ExtraSource[] = [];
    for (const [index, source] of (spec.sources ?? []).entries()) {
      const field = `spec.sources[${index}]`;
      if (!source.path) throw new InvalidSpec(`${field}.path is required: each source is packed in a folder of its own`);
      if (!source.repositoryRef || !source.git) throw new InvalidSpec(`${field} needs repositoryRef and git`);
      const { repository } = await repositoryOfRef(client, cluster, source.repositoryRef, namespace, `${field}.repositoryRef`);
      sources.push({ path: source.path, repository, git: { ref: source.git.ref, folder: source.git.folder } });
    }
    return sources;
  }
  return {
    kind: 'ServiceDeployment',
    schema: ServiceDeploymentSpecSchema,
    // The agent's drift detection (selfHeal, resync interval), not the operator's: it keeps mirroring status.
    reconciliation: () => undefined,
    async desired(resource) {
      const { spec } = resource;
      const namespace = resource.metadata.namespace ?? 'default';
      const clusterName = await clusterNameOf(spec, namespace);
      const template = await resolveTemplate(spec, resource.metadata.name, namespace, spec.reconciliation);
      const sources = [...(template.sources ?? []), ...(await extraSourcesOf(spec, namespace))];
      const renderers = [...(template.renderers ?? []), ...renderersOf(spec)];
      const body: NewServiceBody = {
        ...template,
        ...(sources.length > 0 ? { sources } : {}),
        ...(renderers.length > 0 ? { renderers } : {}),
        dependencies: (spec.dependencies ?? []).map((dependency) => dependency.name),
        protect: spec.protect ?? false,
        ...(spec.version ? { version: spec.version } : {}),
        ...(spec.docsPath ? { docsPath: spec.docsPath } : {}),
      };
      return { attributes: { cluster: clusterName, body } };
    },
    find: async ({ attributes }) => await client.getService(attributes.cluster, attributes.body.name).catch(notFound),
    create: async ({ attributes }) => await client.createService(attributes.cluster, attributes.body),
    async update(remote, { attributes }) {
      const { name: _name, git, helm, syncConfig, secretValues, version, docsPath, sources, renderers, ...changes } = attributes.body;
      return await client.updateService(attributes.cluster, remote.name, {
        ...changes,
        git: git ?? null,
        helm: helm ?? null,
        sources: sources ?? null,
        renderers: renderers ?? null,
        syncConfig: syncConfig ?? null,
        secretValues: secretValues ?? {},
        version: version ?? null,
        docsPath: docsPath ?? null,
      });
    },
    async remove(resource) {
      const remote = (await client.listServices()).find((service) => service.id === resource.status?.id);
      if (!remote) return true;
      const detach = resource.spec.detach === true || resource.spec.protect === true;
      if (!remote.deleting) await client.deleteService(remote.cluster, remote.name, detach).catch(notFound);
      return detach;
    },
    id: (remote) => remote.id,
    bindings: (remote) => ({ scope: { clusters: [remote.cluster], services: [remote.name] }, writeRole: 'writer' }),
    observe: (remote) => ({
      status: {
        revision: remote.revision.number,
        ...(remote.appliedRevision === null ? {} : { appliedRevision: remote.appliedRevision }),
        // Undefined, not left out: the status is merged over the last one, and a released pin must leave it.
        pinnedBy: remote.pinned?.by,
        pendingRevision: remote.pendingRevision ?? undefined,
        errors: remote.errors.map(({ source, message }) => ({ source, message })),
        components: remote.components.map(({ group, version, kind, namespace, name, state, synced, drift }) => ({
          group,
          version,
          kind,
          namespace,
          name,
          state,
          synced,
          ...(drift ? { drift } : {}),
        })),
      },
      readiness: readinessOf(remote),
    }),
  };
}

/**
 * The API body of the spec; `defaults` are the name and namespace it takes when it gives none (the resource's).
 * @throws InvalidSpec for combinations no server accepts.
 */
function serviceBody(
  spec: ServiceTemplate,
  defaults: { name: string; namespace: string },
  source: Source | undefined,
  configuration: Record<string, string>,
  helmUrl: string | undefined,
  reconciliation: ReconciliationSettings | undefined,
): TemplateBody {
  if (spec.git && !source) throw new InvalidSpec('spec.git needs spec.repositoryRef');
  if (spec.kustomize && !spec.git)
    throw new InvalidSpec('spec.kustomize.path is a folder below spec.git.folder: give git and repositoryRef');
  const git = spec.git && {
    ref: gitRef(spec.git.ref ?? source?.ref),
    folder: spec.kustomize ? path.posix.join(spec.git.folder, spec.kustomize.path) : spec.git.folder,
  };
  const renderer = spec.renderer ?? (spec.kustomize ? { kind: 'kustomize' as const } : undefined);
  const helm = spec.helm && {
    url: helmUrl ?? '',
    chart: spec.helm.chart ?? '',
    version: spec.helm.version ?? '',
    ...(spec.helm.values === undefined ? {} : { values: spec.helm.values as Record<string, unknown> }),
    ...(spec.helm.valuesFiles ? { valuesFiles: spec.helm.valuesFiles } : {}),
    ...(spec.helm.release ? { release: spec.helm.release } : {}),
    ...(spec.helm.ignoreHooks ? { ignoreHooks: true } : {}),
    ...(spec.helm.ignoreCrds ? { ignoreCrds: true } : {}),
  };
  const syncConfig = syncConfigOf(spec.syncConfig, reconciliation);
  return {
    name: spec.name ?? defaults.name,
    namespace: spec.namespace ?? defaults.namespace,
    ...(source && git ? { repository: source.repository, git } : {}),
    ...(helm ? { helm } : {}),
    ...(renderer ? { renderer: renderer as NewServiceBody['renderer'] } : {}),
    configuration,
    contexts: spec.contexts ?? [],
    templated: spec.templated !== false,
    ...(syncConfig ? { syncConfig } : {}),
  };
}

/**
 * spec.renderers as the server takes them: Plural's type in lower case, helm.values (YAML text) as a mapping.
 * @throws InvalidSpec naming the renderer whose values are not a YAML mapping.
 */
function renderersOf(spec: ServiceDeploymentSpec): PathRenderer[] {
  return (spec.renderers ?? []).map((renderer, index) => {
    const { values, valuesFiles, release } = renderer.helm ?? {};
    const helm = {
      ...(values === undefined ? {} : { values: valuesIn(values, `spec.renderers[${index}].helm.values`) }),
      ...(valuesFiles?.length ? { valuesFiles } : {}),
      ...(release ? { release } : {}),
    };
    return {
      path: renderer.path,
      kind: renderer.type.toLowerCase() as PathRenderer['kind'],
      ...(Object.keys(helm).length > 0 ? { helm } : {}),
    };
  });
}

/** A YAML values file's mapping. @throws InvalidSpec naming `where` when it is not YAML or not a mapping. */
function valuesIn(text: string, where: string): Values {
  let values: unknown;
  try {
    values = parseYaml(text, where) ?? {};
  } catch (error) {
    throw new InvalidSpec((error as Error).message);
  }
  if (!isPlainObject(values)) throw new InvalidSpec(`${where} is not a YAML mapping of values`);
  return values;
}

/**
 * The CRD's syncConfig as the server takes it: labels and annotations are the namespace's metadata; Plural's
 * reconciliation is the agent's drift detection (driftDetection: selfHeal; interval: resyncInterval).
 * deleteNamespace is left out (not supported: the Supported condition names it). Undefined when there is neither.
 * @throws InvalidSpec when syncConfig.selfHeal and reconciliation.driftDetection disagree.
 */
function syncConfigOf(
  config: ServiceTemplate['syncConfig'],
  reconciliation: ReconciliationSettings | undefined,
): TemplateBody['syncConfig'] {
  const { labels, annotations, deleteNamespace: _unsupported, ...flags } = config ?? {};
  const { driftDetection, interval } = reconciliation ?? {};
  if (driftDetection !== undefined && flags.selfHeal !== undefined && driftDetection !== flags.selfHeal) {
    throw new InvalidSpec('spec.syncConfig.selfHeal and spec.reconciliation.driftDetection disagree: give one');
  }
  const selfHeal = flags.selfHeal ?? driftDetection;
  const merged = {
    ...flags,
    ...(selfHeal === undefined ? {} : { selfHeal }),
    ...(interval ? { resyncInterval: interval } : {}),
    ...(labels || annotations ? { namespaceMetadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) } } : {}),
  };
  return config || Object.keys(merged).length > 0 ? merged : undefined;
}

function gitRef(ref: string | undefined): string {
  if (!ref) throw new InvalidSpec('spec.git.ref is required unless spec.repositoryRef names a Flux GitRepository');
  return ref;
}

function readinessOf(remote: ApiService) {
  const progress = `revision ${remote.revision.number}, applied ${remote.appliedRevision ?? 'none'}`;
  switch (remote.status) {
    case 'healthy':
      return { ready: true, reason: 'Healthy', message: `${progress}; every component running` };
    case 'failed':
      return { ready: false, reason: 'Failed', message: remote.errors.map((e) => e.message).join('; ') || progress };
    default:
      return { ready: false, reason: 'Progressing', message: `${progress}; ${remote.status}` };
  }
}
