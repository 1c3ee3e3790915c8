/**
 * The KluctlDeployment controller as one call: the manager (watch, work queue, leader election) with the
 * reconciler, the watches of Flux GitRepositories and OCIRepositories, the git push webhook receiver (which asks the leader through the
 * object when it lands on a standby), the alert sender, the cache sweeper and the probe server. `gantry controller
 * run` is a thin shell over it; the agent and the operator start their controllers the same way.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { GROUP, KIND, PLURAL, REQUEST_ANNOTATIONS, VERSION, type KluctlDeployment } from '../../api/kluctl-deployment.ts';
import type { Engine } from '../../engine.ts';
import { AlertDispatcher } from '../../gitops/alerts.ts';
import { matchingDeployments } from '../../gitops/repo-url.ts';
import { registerWebhookRoutes } from '../../gitops/webhooks.ts';
import { Cluster } from '../../kube/cluster.ts';
import { KubeClient } from '../../kube/client.ts';
import { FLUX_SOURCE_GROUP, FLUX_SOURCE_KINDS, sweepFluxArtifacts } from '../../source/flux-artifact.ts';
import type { LeaderElectionSettings } from '../../kube/lease.ts';
import type { Logger } from '../../logger.ts';
import type { Address } from '../../ports.ts';
import { runController, type ControllerHandle, type ExtraWatch } from '../../reconcile/manager.ts';
import { startServer, type ControllerServer } from '../../reconcile/server.ts';
import { splitKey } from '../../kube/watcher.ts';
import { EventRecorder } from './events.ts';
import { needsReconcile } from './predicates.ts';
import { reconcileKluctlDeployment, type ReconcilerDeps } from './reconciler.ts';
import { AppliedObjects } from '../../deploy/applied-objects.ts';
import { inMemoryRenderCache } from '../../target/render-cache.ts';
import { gitUrlOf } from './source.ts';

/** The Lease replicas compete for, in the leader election namespace. */
export const LEASE_NAME = 'gantry-controller';
const CACHE_SWEEP_EVERY_MS = 10 * 60_000;
/** Clusters of deployments not reconciled for this long are closed (a kubeconfig Secret that was rotated or deleted). */
const CLUSTER_IDLE_MS = 60 * 60_000;
/** How often objects with nothing scheduled are reconciled (see the manager's resyncPeriodMs). */
const RESYNC_PERIOD_MS = 30 * 60_000;

export interface KluctlControllerOptions {
  /** The controller's own kubeconfig (in-cluster, or --kubeconfig), at the context it runs against. */
  kubeConfig: KubeConfig;
  /** Renderer, git cache, programs, cluster pool and field manager; the caller owns and closes it. */
  engine: Engine;
  /** Watch one namespace only (default all). */
  namespace?: string | undefined;
  /** KluctlDeployments reconciled in parallel. */
  workers: number;
  /** Elect a leader through the Lease LEASE_NAME in this namespace, with these timings; none: this replica always reconciles. */
  leaderElection?: Omit<LeaderElectionSettings, 'name'> | undefined;
  resultsNamespace: string;
  keepResults: number;
  /** Serves /metrics, and POST /hooks/git when webhookSecret is set; none: no such server. */
  metricsAddress?: Address | undefined;
  /** The secret of git push webhooks (GitHub, GitLab, Gitea); none: no receiver. */
  webhookSecret?: string | undefined;
  /** Serves /healthz and /readyz (ready once the watches listed); none: no such server. */
  probeAddress?: Address | undefined;
  /** Git snapshots and mirrors, OCI snapshots and Flux artifacts unused this long are removed, in ms. */
  cacheMaxAgeMs: number;
  logger: Logger;
}

export interface RunningKluctlController {
  handle: ControllerHandle;
  /** The port of /metrics (0 without a metrics address). */
  metricsPort: number;
  /** The port of the probes (0 without a probe address). */
  probePort: number;
  /** Stops reconciling (aborting what runs), releases the Lease, stops the servers, sweeper and alerts. */
  stop(): Promise<void>;
}

/**
 * Starts the controller; resolves once its servers listen.
 * @throws Error when the cluster does not serve KluctlDeployments or an address is taken.
 */
export async function startKluctlController(options: KluctlControllerOptions): Promise<RunningKluctlController> {
  const { engine, logger } = options;
  // The controller's own loop (watches, Lease, status, Events) has a client of its own, outside the pool's throttle:
  // a Lease renewal must never wait behind the readiness polls of the deployments.
  const cluster = new Cluster(new KubeClient(options.kubeConfig));
  const artifactsDir = path.join(engine.config.cacheDir, 'artifacts');
  const fieldManager = engine.config.fieldManager;
  const sweeper = startCacheSweeper(engine, artifactsDir, options.cacheMaxAgeMs, logger);
  // Alerts are sent in the background: a slow receiver must not hold up a reconcile.
  const alerts = new AlertDispatcher(cluster, { log: logger.child({ component: 'alerts' }), fieldManager });
  const deps: ReconcilerDeps = {
    engine,
    cluster,
    kubeConfig: options.kubeConfig,
    artifactsDir,
    resultsNamespace: options.resultsNamespace,
    keepResults: options.keepResults,
    events: new EventRecorder(cluster, {
      component: 'gantry-controller',
      fieldManager,
      onError: (error) => logger.warn({ err: error }, 'an event could not be recorded'),
    }),
    notify: (event) => void alerts.notify(event),
    applied: new AppliedObjects(),
    renders: inMemoryRenderCache(),
  };
  const { webhookSecret } = options;
  const controller = await runController({
    cluster,
    resource: { group: GROUP, version: VERSION, plural: PLURAL },
    name: 'kluctldeployment',
    namespace: options.namespace,
    workers: options.workers,
    leaderElection: options.leaderElection && { ...options.leaderElection, name: LEASE_NAME },
    server: options.metricsAddress && {
      ...options.metricsAddress,
      routes: webhookSecret
        ? (app, handle) => registerWebhookRoutes(app, { secret: webhookSecret, onPush: (urls) => onPush(urls, handle, engine, cluster) })
        : undefined,
    },
    logger,
    extraWatches: await fluxSourceWatches(cluster, options.namespace),
    updateFilter: needsReconcile,
    resyncPeriodMs: RESYNC_PERIOD_MS,
    reconcile: (key, _object, signal, context) =>
      reconcileKluctlDeployment(splitKey(key), deps, { log: context.log, metrics: context.metrics, signal }),
  });
  controller.metrics.observeClusters(() => ({ clusters: engine.clusters.size, discoveryLoads: engine.clusters.discoveryLoads }));
  const probes = options.probeAddress && (await startProbeServer(options.probeAddress, controller, logger));
  return {
    handle: controller,
    metricsPort: controller.port,
    probePort: probes?.port ?? 0,
    stop: async () => {
      clearInterval(sweeper);
      await controller.stop();
      await Promise.all([probes?.close(), alerts.close()]);
      await cluster.close();
    },
  };
}

/** /healthz and /readyz on their own address, as the kubelet probes them (ready once the watches listed). */
async function startProbeServer(address: Address, controller: ControllerHandle, logger: Logger): Promise<ControllerServer> {
  let synced = false;
  void controller.waitForSync().then(() => (synced = true));
  return startServer({
    ...address,
    metrics: controller.metrics,
    readiness: [{ name: 'watches synced', check: () => synced }],
    log: logger.child({ component: 'probes' }),
  });
}

/**
 * Sweeps the caches and idle clusters now and then, so a long-running controller keeps what its deployments use,
 * not every commit and every kubeconfig it ever saw.
 */
function startCacheSweeper(engine: Engine, artifactsDir: string, maxAgeMs: number, logger: Logger): NodeJS.Timeout {
  const log = logger.child({ component: 'cache' });
  const sweep = async () => {
    const removed =
      (await engine.git.sweep(maxAgeMs)) + (await engine.oci.sweep(maxAgeMs)) + (await sweepFluxArtifacts(artifactsDir, maxAgeMs));
    const closed = await engine.clusters.sweep(CLUSTER_IDLE_MS);
    if (removed > 0 || closed > 0) log.info({ removed, closedClusters: closed }, 'removed unused cache entries');
  };
  const timer = setInterval(
    () => void sweep().catch((error: unknown) => log.warn({ err: error }, 'sweeping the cache failed')),
    Math.min(maxAgeMs, CACHE_SWEEP_EVERY_MS),
  );
  timer.unref();
  return timer;
}

/**
 * A push to a repository reconciles every deployment sourced from it now, fetching the repository afresh. A standby
 * replica cannot reconcile, so it asks the leader through the object (Kluctl's reconcile request annotation).
 */
async function onPush(urls: string[], controller: ControllerHandle, engine: Engine, cluster: Cluster): Promise<void> {
  const cached = [...controller.cache].map(([key, object]) => ({ key, spec: object['spec'] as KluctlDeployment['spec'] }));
  for (const deployment of matchingDeployments(cached, urls)) {
    const url = gitUrlOf(deployment);
    if (url) engine.git.expire(url);
    if (controller.isLeader()) controller.enqueue(deployment.key);
    else {
      const annotations = { [REQUEST_ANNOTATIONS.reconcile]: new Date().toISOString() };
      await cluster.patchMerge(
        { group: GROUP, version: VERSION, kind: KIND, ...splitKey(deployment.key) },
        { metadata: { annotations } },
        { fieldManager: engine.config.fieldManager },
      );
    }
  }
}

/**
 * When Flux's source-controller runs in the cluster, a new artifact of a GitRepository or OCIRepository reconciles
 * the deployments whose sourceRef names it (as Flux's kustomize-controller follows its sources).
 */
async function fluxSourceWatches(cluster: Cluster, namespace: string | undefined): Promise<ExtraWatch[]> {
  const watches: ExtraWatch[] = [];
  for (const kind of FLUX_SOURCE_KINDS) {
    const served = await cluster.discovery.find(FLUX_SOURCE_GROUP, 'v1', kind);
    if (!served) continue;
    watches.push({
      resource: { group: FLUX_SOURCE_GROUP, version: 'v1', plural: served.resource },
      // A controller limited to one namespace may only be allowed to watch there.
      namespace,
      map: (key, _object, primaries) => {
        const source = splitKey(key);
        return [...primaries]
          .filter(([, object]) => {
            const ref = (object['spec'] as KluctlDeployment['spec']).sourceRef;
            return ref?.kind === kind && ref.name === source.name && (ref.namespace ?? object.metadata.namespace) === source.namespace;
          })
          .map(([primaryKey]) => primaryKey);
      },
    });
  }
  return watches;
}
