/**
 * Runs one controller, as controller-runtime's manager does for Flux and Kluctl: a watcher fills a cache and puts
 * the key of every changed object on the work queue; workers call the reconciler with the cached object; the
 * reconciler's requeue delay (or, when it throws, the queue's backoff) schedules the next run of the key.
 *
 * With leader election every replica watches (so /readyz and a standby's cache are warm) but only the leader runs
 * workers; on becoming leader every cached object is reconciled once. Each reconcile gets an AbortSignal that fires
 * when the controller stops or loses leadership; a replica releases its Lease only after its reconciles returned.
 */
import type { FastifyInstance } from 'fastify';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import { LeaderElector, type LeaderElectionSettings } from '../kube/lease.ts';
import { reconcileLogger, type Logger } from '../logger.ts';
import { ControllerMetrics, type ReconcileOutcome } from './metrics.ts';
import { startServer } from './server.ts';
import { WorkQueue, type HandlerResult } from './work-queue.ts';
import { splitKey, Watcher, type ChangeHandler, type WatchedResource } from '../kube/watcher.ts';

/** What a reconciler gets besides the key, the object and the signal. */
export interface ReconcileContext {
  /** A logger with controller, namespace, name and reconcileID. */
  log: Logger;
  reconcileID: string;
  /** The controller's metrics, for the reconciler's own (recordDeploy, recordDrift). */
  metrics: ControllerMetrics;
}

export interface ReconcileResult {
  /** Reconcile this key again after this many ms (an earlier request, e.g. a change of the object, wins). */
  requeueAfterMs?: number;
  /**
   * A failure the reconciler handled itself (status written, latest retry chosen with requeueAfterMs, e.g. the
   * retryInterval): logged and counted as a failed reconcile, and retried after the queue's backoff when that is
   * sooner, so a transient API error does not wait a whole retryInterval.
   */
  error?: unknown;
}

/**
 * Brings the world in line with the object `key` (`namespace/name`): `object` is the cached object, undefined when
 * it was deleted. Throwing is a failure retried with the queue's bounded exponential backoff (1 s … 5 min).
 */
export type Reconciler = (
  key: string,
  object: KubeObject | undefined,
  signal: AbortSignal,
  context: ReconcileContext,
) => Promise<ReconcileResult | void>;

/** Another resource whose changes trigger reconciles of primary objects (e.g. Secrets a deployment uses). */
export interface ExtraWatch {
  resource: WatchedResource;
  namespace?: string;
  labelSelector?: string;
  /** The primary keys to reconcile when `key` of this resource changed (object undefined: deleted). */
  map: (key: string, object: KubeObject | undefined, primaries: ReadonlyMap<string, KubeObject>) => Iterable<string>;
}

export interface ControllerOptions {
  cluster: Cluster;
  /** The primary resource, e.g. `{ group: 'gitops.gantry.dev', version: 'v1beta1', plural: 'kluctldeployments' }`. */
  resource: WatchedResource;
  /** The controller's name in logs and metrics; default the resource's plural. */
  name?: string;
  /** Watch one namespace only (default all) / only objects matching a label selector. */
  namespace?: string;
  labelSelector?: string;
  reconcile: Reconciler;
  /**
   * Which updates of a primary object need a reconcile, as controller-runtime's predicates decide (e.g. only a new
   * generation, not the reconciler's own status patches); default every update. Creations and deletions always do.
   */
  updateFilter?: (object: KubeObject, previous: KubeObject) => boolean;
  /** Concurrent reconciles (different keys only). */
  workers: number;
  leaderElection?: LeaderElectionSettings;
  /** The HTTP server of /healthz, /readyz, /metrics and added routes; none: the process serves them elsewhere, or not. */
  server?: {
    host: string;
    /** 0 picks a free port (ControllerHandle.port). */
    port: number;
    /** Adds routes before the server listens; `controller` is usable from request handlers. */
    routes?: (app: FastifyInstance, controller: ControllerHandle) => void | Promise<void>;
  };
  logger: Logger;
  /** Default: a new ControllerMetrics with the resource's plural as subsystem (`kluctldeployments_…`, as Kluctl). */
  metrics?: ControllerMetrics;
  extraWatches?: readonly ExtraWatch[];
  /** Watch staleness limit (see Watcher); default 3 min. */
  staleAfterMs?: number;
  /** The queue's backoff for reconcilers that throw; defaults 1 s and 5 min. */
  errorBackoff?: { baseMs: number; maxMs: number };
  /**
   * Every this many ms, the leader reconciles each cached object that has nothing scheduled (controller-runtime's
   * SyncPeriod, limited to objects a lost requeue would otherwise strand); default never.
   */
  resyncPeriodMs?: number;
}

export interface ControllerHandle {
  /** Stops reconciling (aborting running reconciles and waiting for them), releases the Lease, stops watches and server. */
  stop(): Promise<void>;
  /** Reconciles `key` now, or after `afterMs` (earliest due time wins). Local to this replica: see README. */
  enqueue(key: string, afterMs?: number): void;
  /** The fastify instance (routes are added through options.server.routes); undefined without a server. */
  server: FastifyInstance | undefined;
  /** The port the server listens on; 0 without a server. */
  port: number;
  /** The primary objects by key, as last seen by the watch. */
  cache: ReadonlyMap<string, KubeObject>;
  metrics: ControllerMetrics;
  /** Whether this replica runs the workers (always true without leader election, once started). */
  isLeader(): boolean;
  /** Resolves once every watch has listed its objects. */
  waitForSync(): Promise<void>;
}

/**
 * Starts the controller: the server listens, watches start, and (after winning the election, when configured)
 * the workers reconcile. Resolves once the server listens.
 * @throws Error when the resource is not served by the cluster or the server cannot listen.
 */
export async function runController(options: ControllerOptions): Promise<ControllerHandle> {
  const kind = await kindOf(options.cluster, options.resource);
  const controller = new Controller(options, kind);
  await controller.start();
  return controller.handle;
}

/** One running controller; runController's handle is its public face. */
class Controller {
  readonly handle: ControllerHandle;
  private readonly options: ControllerOptions;
  private readonly name: string;
  private readonly kind: string;
  private readonly log: Logger;
  private readonly metrics: ControllerMetrics;
  private readonly queue: WorkQueue;
  private readonly primary: Watcher;
  private readonly watchers: Watcher[];
  private readonly elector: LeaderElector | undefined;
  /** Aborts on stop when there is no leader election (the elector gives each leadership term its own signal). */
  private readonly ownTerm = new AbortController();
  /** The signal of the current term, handed to every reconcile. */
  private term: AbortSignal = AbortSignal.abort();
  private stopping: Promise<void> | undefined;
  private closeServer: () => Promise<void> = async () => {};

  constructor(options: ControllerOptions, kind: string) {
    this.options = options;
    this.kind = kind;
    this.name = options.name ?? options.resource.plural;
    this.log = options.logger.child({ controller: this.name });
    this.metrics = options.metrics ?? new ControllerMetrics(options.resource.plural);
    this.queue = new WorkQueue((key) => this.reconcile(key), {
      workers: options.workers,
      errorBackoffBaseMs: options.errorBackoff?.baseMs,
      errorBackoffMaxMs: options.errorBackoff?.maxMs,
      onError: (key, _error, retryInMs) => this.log.debug({ key, retryInMs }, 'reconcile retry scheduled'),
    });
    this.metrics.observeQueue(this.name, () => ({
      depth: this.queue.depth,
      activeWorkers: this.queue.activeCount,
      maxWorkers: options.workers,
    }));
    this.primary = this.watcher(options.resource, options, (key, object, previous) => {
      if (object && previous && options.updateFilter && !options.updateFilter(object, previous)) return;
      this.queue.add(key);
    });
    this.watchers = [
      this.primary,
      ...(options.extraWatches ?? []).map((extra) =>
        this.watcher(extra.resource, extra, (key, object) => this.mapExtraChange(extra, key, object)),
      ),
    ];
    this.elector = options.leaderElection && this.newElector(options.leaderElection);
    this.handle = {
      stop: () => (this.stopping ??= this.stop()),
      enqueue: (key, afterMs) => this.queue.addAfter(key, afterMs ?? 0),
      // Filled in by start(): routes get the handle before the server listens.
      server: undefined,
      port: 0,
      cache: this.primary.cache,
      metrics: this.metrics,
      isLeader: () => (this.elector ? this.elector.isLeader : !this.ownTerm.signal.aborted),
      waitForSync: () => this.synced(),
    };
  }

  async start(): Promise<void> {
    if (this.options.server) await this.startServer(this.options.server);
    for (const watcher of this.watchers) watcher.start();
    if (this.elector) this.elector.start();
    else void this.startWorkers(this.ownTerm.signal);
    this.log.info(
      { port: this.handle.port, leaderElection: Boolean(this.elector), namespace: this.options.namespace ?? 'all' },
      'controller started',
    );
  }

  private async startServer(settings: NonNullable<ControllerOptions['server']>): Promise<void> {
    const { resource, extraWatches = [] } = this.options;
    const server = await startServer({
      host: settings.host,
      port: settings.port,
      metrics: this.metrics,
      log: this.log.child({ component: 'http' }),
      readiness: this.watchers.map((watcher, index) => ({
        name: `watch ${resourceName(index === 0 ? resource : extraWatches[index - 1]!.resource)}`,
        check: () => watcher.synced,
      })),
      routes: settings.routes && ((app) => settings.routes!(app, this.handle)),
    });
    this.handle.server = server.app;
    this.handle.port = server.port;
    this.closeServer = () => server.close();
  }

  private async stop(): Promise<void> {
    if (this.elector) await this.elector.stop();
    else {
      this.ownTerm.abort();
      await this.stopWorkers();
    }
    await Promise.all(this.watchers.map((watcher) => watcher.stop()));
    await this.closeServer();
    this.log.info('controller stopped');
  }

  /** Runs workers for one term (until `term` aborts): waits for the caches, then reconciles everything once. */
  private async startWorkers(term: AbortSignal): Promise<void> {
    this.term = term;
    await this.synced();
    if (term.aborted) return;
    for (const key of this.primary.cache.keys()) this.queue.add(key);
    this.queue.start();
    if (this.options.resyncPeriodMs) this.resyncDuring(term, this.options.resyncPeriodMs);
    this.log.info({ objects: this.primary.cache.size, workers: this.options.workers }, 'workers started');
  }

  /** Queues the cached objects nothing is scheduled for, every `periodMs` until `term` aborts. */
  private resyncDuring(term: AbortSignal, periodMs: number): void {
    const timer = setInterval(() => {
      const stranded = [...this.primary.cache.keys()].filter((key) => !this.queue.has(key));
      if (stranded.length > 0) this.log.info({ objects: stranded.length }, 'resync: reconciling objects with nothing scheduled');
      for (const key of stranded) this.queue.add(key);
    }, periodMs);
    timer.unref();
    term.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  /** Stops handing out keys and waits for the running reconciles (their signal was aborted with the term). */
  private async stopWorkers(): Promise<void> {
    await this.queue.stop();
    this.log.info('workers stopped');
  }

  /** One reconcile of `key`, logged and measured; the queue schedules the next one from its result. */
  private async reconcile(key: string): Promise<HandlerResult> {
    const object = this.primary.cache.get(key);
    const { namespace, name } = splitKey(key);
    const context = { ...reconcileLogger(this.log, { namespace, name }), metrics: this.metrics };
    const signal = this.term;
    const started = performance.now();
    let outcome: ReconcileOutcome = 'error';
    try {
      const result = (await this.options.reconcile(key, object, signal, context)) ?? {};
      if (result.error !== undefined) context.log.error({ err: result.error, requeueAfterMs: result.requeueAfterMs }, 'reconcile failed');
      else outcome = result.requeueAfterMs === undefined ? 'success' : 'requeue_after';
      return { requeueAfterMs: result.requeueAfterMs, failed: result.error !== undefined };
    } catch (error) {
      if (signal.aborted) context.log.info('reconcile aborted: the controller stops or lost leadership');
      else context.log.error({ err: error }, 'reconcile failed; retrying with backoff');
      throw error;
    } finally {
      const ref = { kind: this.kind, namespace, name };
      if (!signal.aborted || outcome !== 'error')
        this.metrics.recordReconcile(this.name, ref, (performance.now() - started) / 1000, outcome);
      if (!object && !this.primary.cache.has(key)) this.metrics.forgetObject(ref);
    }
  }

  private mapExtraChange(extra: ExtraWatch, key: string, object: KubeObject | undefined): void {
    try {
      for (const primaryKey of extra.map(key, object, this.primary.cache)) this.queue.add(primaryKey);
    } catch (error) {
      this.log.error({ err: error, resource: resourceName(extra.resource), key }, 'mapping a change to primary objects failed');
    }
  }

  private watcher(resource: WatchedResource, scope: { namespace?: string; labelSelector?: string }, onChange: ChangeHandler): Watcher {
    return new Watcher({
      client: this.options.cluster.client,
      resource,
      namespace: scope.namespace,
      labelSelector: scope.labelSelector,
      staleAfterMs: this.options.staleAfterMs,
      log: this.log.child({ component: 'watch', resource: resourceName(resource) }),
      onChange,
    });
  }

  private synced(): Promise<void> {
    return Promise.all(this.watchers.map((watcher) => watcher.waitForSync())).then(() => undefined);
  }

  private newElector(settings: LeaderElectionSettings): LeaderElector {
    const lease = `${settings.namespace}/${settings.name}`;
    this.metrics.recordLeader(lease, false);
    return new LeaderElector({
      client: this.options.cluster.client,
      ...settings,
      log: this.log.child({ component: 'leader-election' }),
      onStartedLeading: (term) => {
        this.metrics.recordLeader(lease, true);
        this.startWorkers(term).catch((error: unknown) => this.log.error({ err: error }, 'starting workers failed'));
      },
      onStoppedLeading: async () => {
        this.metrics.recordLeader(lease, false);
        await this.stopWorkers();
      },
    });
  }
}

/** The kind of a served resource, from discovery. */
async function kindOf(cluster: Cluster, resource: WatchedResource): Promise<string> {
  const served = (await cluster.discovery.resources()).find(
    (entry) => entry.group === resource.group && entry.version === resource.version && entry.resource === resource.plural,
  );
  if (!served) throw new Error(`the cluster serves no ${resourceName(resource)} (is its CustomResourceDefinition installed?)`);
  return served.kind;
}

function resourceName(resource: WatchedResource): string {
  return `${resource.plural}${resource.group ? `.${resource.group}` : ''}/${resource.version}`;
}
