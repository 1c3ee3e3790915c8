/**
 * The deployment operator: one controller per fleet kind in the management cluster (watch, work queue, leader
 * election of the controller framework in src/controller), each reconciling its resources into the server's API
 * with fleet-object.ts. Each kind also watches what its resources reference (Clusters, GitRepositories, Flux
 * sources, Secrets, ServiceDeployments, NotificationSinks), so a reference that was not ready is taken up as soon as
 * it is. `gantry operator run` is a thin shell over it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  type GlobalServiceSpec,
  type HelmRepositorySpec,
  type NotificationRouterSpec,
  type NotificationSinkSpec,
  type ObjectReference,
  type PipelineSpec,
  type ServiceDeploymentSpec,
} from '../api/fleet.ts';
import type { FleetClient } from '../client/fleet-client.ts';
import type { LeaderElectionSettings } from '../kube/lease.ts';
import { ControllerMetrics } from '../reconcile/metrics.ts';
import { startServer, type ControllerServer } from '../reconcile/server.ts';
import { runController, type ControllerHandle, type ExtraWatch } from '../reconcile/manager.ts';
import { splitKey } from '../kube/watcher.ts';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import type { Logger } from '../logger.ts';
import type { Address } from '../ports.ts';
import { FLUX_SOURCE_GROUP } from '../source/flux-artifact.ts';
import { clusterKind } from './cluster.ts';
import { type FleetKind, reconcileFleetObject } from './fleet-object.ts';
import { isFluxRef } from './flux-source.ts';
import { gitRepositoryKind } from './git-repository.ts';
import { globalServiceKind } from './global-service.ts';
import { helmRepositoryKind } from './helm-repository.ts';
import { notificationRouterKind } from './notification-router.ts';
import { pipelineKind } from './pipeline.ts';
import { notificationSinkKind } from './notification-sink.ts';
import { serviceContextKind } from './service-context.ts';
import { serviceDeploymentKind } from './service-deployment.ts';
import { allowCrossNamespaceRefs } from './references.ts';

export const OPERATOR_FIELD_MANAGER = 'gantry-operator';

export interface OperatorOptions {
  /** The management cluster, at the context the operator runs against. */
  kubeConfig: KubeConfig;
  /** A client of the server with an admin API token. */
  client: FleetClient;
  /** Resources reconciled in parallel, per kind. */
  workers: number;
  /** How often a synced resource's status is read again from the server, in ms (Plural requeues every 30 s to 2 min). */
  statusIntervalMs: number;
  /** Serve /metrics (every kind's controller metrics) here; none: not served. */
  metricsAddress?: Address;
  /** Serve /healthz and /readyz (ready once every watch listed) here; none: not served. */
  probeAddress?: Address;
  /** Elect a leader per kind through Leases `gantry-operator-<kind>` in this namespace; none: always reconcile. */
  leaderElection?: Omit<LeaderElectionSettings, 'name'>;
  log: Logger;
  /**
   * Follow clusterRef, repositoryRef, configurationRef, valuesFrom, serviceRef, … into other namespaces than the
   * referring resource's, and read Secrets there (`--allow-cross-namespace-refs`); refused by default (references.ts).
   */
  allowCrossNamespaceRefs?: boolean;
}

export interface RunningOperator {
  controllers: ControllerHandle[];
  /** Ports actually listened on (0: not served). */
  metricsPort: number;
  probePort: number;
  /** Resolves once every watch listed its objects. */
  waitForSync(): Promise<void>;
  stop(): Promise<void>;
}

interface KindController {
  plural: string;
  kind: FleetKind<any, any, any, any>;
  extraWatches?: ExtraWatch[];
}

/** Starts a controller per kind. @throws Error when the cluster does not serve the fleet's CRDs (install them first). */
export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const cluster = new Cluster(new KubeClient(options.kubeConfig));
  if (options.allowCrossNamespaceRefs) allowCrossNamespaceRefs(cluster);
  const { client } = options;
  const kinds: KindController[] = [
    { plural: 'gitrepositories', kind: gitRepositoryKind(client, cluster) },
    { plural: 'clusters', kind: clusterKind(client, cluster, OPERATOR_FIELD_MANAGER) },
    {
      plural: 'servicedeployments',
      kind: serviceDeploymentKind(client, cluster),
      extraWatches: [...serviceDeploymentWatches(), ...(await fluxSourceWatches(cluster))],
    },
    { plural: 'servicecontexts', kind: serviceContextKind(client) },
    { plural: 'globalservices', kind: globalServiceKind(client, cluster), extraWatches: globalServiceWatches() },
    { plural: 'helmrepositories', kind: helmRepositoryKind(client, cluster), extraWatches: helmRepositoryWatches() },
    { plural: 'notificationsinks', kind: notificationSinkKind(client, cluster), extraWatches: notificationSinkWatches() },
    { plural: 'notificationrouters', kind: notificationRouterKind(client, cluster), extraWatches: notificationRouterWatches() },
    { plural: 'pipelines', kind: pipelineKind(client, cluster), extraWatches: pipelineWatches() },
  ];
  const controllers: ControllerHandle[] = [];
  const servers: ControllerServer[] = [];
  // One registry for every kind: the controllers' series carry their name as a label.
  const metrics = new ControllerMetrics('fleetresources');
  try {
    for (const { plural, kind, extraWatches } of kinds) {
      const resource = { group: FLEET_GROUP, version: FLEET_VERSION, kind: kind.kind };
      const log = options.log.child({ controller: plural });
      controllers.push(
        await runController({
          cluster,
          resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural },
          name: kind.kind.toLowerCase(),
          workers: options.workers,
          ...(options.leaderElection ? { leaderElection: { ...options.leaderElection, name: `gantry-operator-${plural}` } } : {}),
          logger: log,
          metrics,
          extraWatches,
          // Status patches are the operator's own: only spec, metadata (finalizers, deletion) and references matter.
          updateFilter: (object, previous) =>
            JSON.stringify(object['spec']) !== JSON.stringify(previous['spec']) ||
            JSON.stringify(object.metadata) !== JSON.stringify(previous.metadata),
          reconcile: async (_key, object, _signal, context) =>
            object
              ? await reconcileFleetObject(kind, object, {
                  cluster,
                  client,
                  fieldManager: OPERATOR_FIELD_MANAGER,
                  resource,
                  log: context.log,
                  statusIntervalMs: options.statusIntervalMs,
                })
              : undefined,
        }),
      );
    }
    let synced = false;
    void Promise.all(controllers.map((controller) => controller.waitForSync())).then(() => (synced = true));
    const serve = async (address: Address, readiness: boolean) =>
      servers.push(
        await startServer({
          ...address,
          metrics,
          readiness: readiness ? [{ name: 'watches synced', check: () => synced }] : [],
          log: options.log.child({ component: readiness ? 'probes' : 'metrics' }),
        }),
      );
    if (options.metricsAddress) await serve(options.metricsAddress, false);
    if (options.probeAddress) await serve(options.probeAddress, true);
  } catch (error) {
    await Promise.all([...controllers.map((controller) => controller.stop()), ...servers.map((server) => server.close())]);
    await cluster.close();
    throw error;
  }
  return {
    controllers,
    metricsPort: options.metricsAddress ? (servers.at(0)?.port ?? 0) : 0,
    probePort: options.probeAddress ? (servers.at(-1)?.port ?? 0) : 0,
    waitForSync: async () => {
      await Promise.all(controllers.map((controller) => controller.waitForSync()));
    },
    stop: async () => {
      await Promise.all([...controllers.map((controller) => controller.stop()), ...servers.map((server) => server.close())]);
      await cluster.close();
    },
  };
}

/** Maps a referent's key to the resources whose `pick`ed reference (or one of them) names it. */
const referencing =
  <Spec>(pick: (spec: Spec) => ObjectReference | undefined | Array<ObjectReference | undefined>, namespaced: boolean): ExtraWatch['map'] =>
  (key, _object, primaries) => {
    const { namespace, name } = splitKey(key);
    return [...primaries]
      .filter(([primaryKey, primary]) =>
        [pick(((primary as KubeObject & { spec?: Spec }).spec ?? {}) as Spec)].flat().some((ref) => {
          if (!ref || ref.name !== name) return false;
          return !namespaced || (ref.namespace ?? splitKey(primaryKey).namespace) === namespace;
        }),
      )
      .map(([primaryKey]) => primaryKey);
  };

/** A ServiceDeployment is reconciled again when a Cluster, GitRepository, Secret or ConfigMap it references changes. */
function serviceDeploymentWatches(): ExtraWatch[] {
  const gantryRef = (spec: ServiceDeploymentSpec) =>
    spec.repositoryRef && !isFluxRef(spec.repositoryRef) ? spec.repositoryRef : undefined;
  return [
    {
      resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'clusters' },
      map: referencing<ServiceDeploymentSpec>((spec) => spec.clusterRef, true),
    },
    { resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'gitrepositories' }, map: referencing(gantryRef, false) },
    {
      resource: { group: '', version: 'v1', plural: 'secrets' },
      map: referencing<ServiceDeploymentSpec>((spec) => [spec.configurationRef, spec.helm?.valuesFrom], true),
    },
    {
      resource: { group: '', version: 'v1', plural: 'configmaps' },
      map: referencing<ServiceDeploymentSpec>((spec) => spec.helm?.valuesConfigMapRef, true),
    },
  ];
}

/** A GlobalService is reconciled again when its ServiceDeployment, or its template's GitRepository or Secret, changes. */
function globalServiceWatches(): ExtraWatch[] {
  const templateRepository = (spec: GlobalServiceSpec) =>
    spec.template?.repositoryRef && !isFluxRef(spec.template.repositoryRef) ? spec.template.repositoryRef : undefined;
  return [
    {
      resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'servicedeployments' },
      map: referencing<GlobalServiceSpec>((spec) => spec.serviceRef, true),
    },
    { resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'gitrepositories' }, map: referencing(templateRepository, false) },
    {
      resource: { group: '', version: 'v1', plural: 'secrets' },
      map: referencing<GlobalServiceSpec>((spec) => spec.template?.configurationRef, true),
    },
  ];
}

/** A HelmRepository is reconciled again when its password's Secret changes. */
function helmRepositoryWatches(): ExtraWatch[] {
  return [
    {
      resource: { group: '', version: 'v1', plural: 'secrets' },
      map: referencing<HelmRepositorySpec>((spec) => spec.auth?.basic?.passwordSecretRef, true),
    },
  ];
}

/** A NotificationSink is reconciled again when its Secret changes. */
function notificationSinkWatches(): ExtraWatch[] {
  return [
    { resource: { group: '', version: 'v1', plural: 'secrets' }, map: referencing<NotificationSinkSpec>((spec) => spec.secretRef, true) },
  ];
}

/** A NotificationRouter is reconciled again when a sink, Cluster or ServiceDeployment it names changes. */
function notificationRouterWatches(): ExtraWatch[] {
  const resource = (plural: string) => ({ group: FLEET_GROUP, version: FLEET_VERSION, plural });
  return [
    { resource: resource('notificationsinks'), map: referencing<NotificationRouterSpec>((spec) => spec.sinks, true) },
    { resource: resource('clusters'), map: referencing<NotificationRouterSpec>((spec) => spec.filters?.map((f) => f.clusterRef), true) },
    {
      resource: resource('servicedeployments'),
      map: referencing<NotificationRouterSpec>((spec) => spec.filters?.map((f) => f.serviceRef), true),
    },
  ];
}

/** A Pipeline is reconciled again when a ServiceDeployment or Cluster (of a JOB gate) it references changes. */
function pipelineWatches(): ExtraWatch[] {
  const services = (spec: PipelineSpec) =>
    spec.stages.flatMap((stage) => stage.services.flatMap((s) => [s.serviceRef, s.criteria?.serviceRef]));
  const clusters = (spec: PipelineSpec) => (spec.edges ?? []).flatMap((edge) => (edge.gates ?? []).map((gate) => gate.clusterRef));
  return [
    { resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'servicedeployments' }, map: referencing(services, true) },
    { resource: { group: FLEET_GROUP, version: FLEET_VERSION, plural: 'clusters' }, map: referencing(clusters, true) },
  ];
}

/** Flux GitRepositories and HelmRepositories, watched only when the cluster serves them: a reference waits for one to appear. */
async function fluxSourceWatches(cluster: Cluster): Promise<ExtraWatch[]> {
  const references: Array<[kind: string, pick: (spec: ServiceDeploymentSpec) => ObjectReference | undefined]> = [
    ['GitRepository', (spec) => (spec.repositoryRef && isFluxRef(spec.repositoryRef) ? spec.repositoryRef : undefined)],
    ['HelmRepository', (spec) => spec.helm?.repository],
  ];
  const watches: ExtraWatch[] = [];
  for (const [kind, pick] of references) {
    const served = await cluster.discovery.find(FLUX_SOURCE_GROUP, 'v1', kind);
    if (served)
      watches.push({ resource: { group: FLUX_SOURCE_GROUP, version: 'v1', plural: served.resource }, map: referencing(pick, true) });
  }
  return watches;
}
