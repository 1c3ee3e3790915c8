/**
 * The controller's Prometheus metrics, in a registry of their own (one per manager, so tests can run several).
 * Names follow what dashboards for Flux and Kluctl already query:
 * - `gotk_reconcile_duration_seconds{kind,name,namespace}`: Flux's reconcile histogram, with Flux's buckets
 *   (10 exponential buckets from 10 ms to 30 min) and labels; one series set per object, as in Flux.
 * - controller-runtime's (Flux and Kluctl export them too): `controller_runtime_reconcile_total{controller,result}`,
 *   `controller_runtime_reconcile_errors_total{controller}`, `controller_runtime_active_workers{controller}`,
 *   `controller_runtime_max_concurrent_reconciles{controller}`, `workqueue_depth{name}`; and client-go's
 *   `leader_election_master_status{name}`.
 * - per object, under a subsystem prefix like Kluctl's `kluctldeployments_…` gauges (labels namespace, name):
 *   `<subsystem>_reconcile_failures_total`, `<subsystem>_deploys_total{result}`, `<subsystem>_drifted_objects`.
 * - process and Node.js metrics (prom-client's defaults: CPU, memory, event loop lag, GC, handles).
 * Per-object series are removed when their object is deleted (forgetObject), so they stay bounded by the number
 * of objects that exist.
 */
import { collectDefaultMetrics, Counter, exponentialBuckets, Gauge, Histogram, Registry } from 'prom-client';

/** Flux's buckets: prometheus.ExponentialBucketsRange(10e-3, 1800, 10). */
const FLUX_DURATION_BUCKETS = exponentialBuckets(0.01, (1800 / 0.01) ** (1 / 9), 10);

/** What a manager reports about its queue at scrape time. */
export interface QueueGauges {
  depth: number;
  activeWorkers: number;
  maxWorkers: number;
}

export type ReconcileOutcome = 'success' | 'error' | 'requeue_after';

/**
 * One manager's metrics: the reconcile loop and reconcilers call the record* methods, the metrics endpoint calls
 * scrape(). Durations are in seconds, as Prometheus names them. Each instance has its own `registry`, so several
 * managers in one process do not clash; it has no close().
 * @throws (constructor) Error when `subsystem` is not a valid metric name prefix.
 */
export class ControllerMetrics {
  readonly registry = new Registry();
  /** The prefix of the per-object metrics, e.g. `kluctldeployments`. */
  readonly subsystem: string;
  private readonly reconcileDuration: Histogram<'kind' | 'name' | 'namespace'>;
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly failures: Counter<'namespace' | 'name'>;
  private readonly deploys: Counter<'namespace' | 'name' | 'result'>;
  private readonly drifted: Gauge<'namespace' | 'name'>;
  private readonly leader: Gauge<'name'>;
  private readonly queues = new Map<string, () => QueueGauges>();

  /** @param subsystem prefix of the per-object metrics; Kluctl uses `kluctldeployments`. */
  constructor(subsystem: string) {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(subsystem)) throw new Error(`'${subsystem}' is not a valid Prometheus metric name prefix`);
    this.subsystem = subsystem;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.reconcileDuration = new Histogram({
      name: 'gotk_reconcile_duration_seconds',
      help: 'The duration in seconds of a GitOps Toolkit resource reconciliation.',
      labelNames: ['kind', 'name', 'namespace'],
      buckets: FLUX_DURATION_BUCKETS,
      registers,
    });
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.failures = new Counter({
      name: `${subsystem}_reconcile_failures_total`,
      help: 'Failed reconciliations of a single object.',
      labelNames: ['namespace', 'name'],
      registers,
    });
    this.deploys = new Counter({
      name: `${subsystem}_deploys_total`,
      help: 'Deployments of a single object, by result (success, failure).',
      labelNames: ['namespace', 'name', 'result'],
      registers,
    });
    this.drifted = new Gauge({
      name: `${subsystem}_drifted_objects`,
      help: 'Objects that drifted from the desired state at the last drift detection of a single object.',
      labelNames: ['namespace', 'name'],
      registers,
    });
    this.leader = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
      labelNames: ['name'],
      registers,
    });
    const queues = this.queues;
    const queueGauge = (name: string, help: string, label: 'name' | 'controller', pick: (gauges: QueueGauges) => number) =>
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers,
        collect() {
          this.reset();
          for (const [controller, read] of queues) this.set({ [label]: controller }, pick(read()));
        },
      });
    queueGauge('workqueue_depth', 'Current depth of workqueue', 'name', (gauges) => gauges.depth);
    queueGauge(
      'controller_runtime_active_workers',
      'Number of currently used workers per controller',
      'controller',
      (gauges) => gauges.activeWorkers,
    );
    queueGauge(
      'controller_runtime_max_concurrent_reconciles',
      'Maximum number of concurrent reconciles per controller',
      'controller',
      (gauges) => gauges.maxWorkers,
    );
  }

  /**
   * Reports a cluster pool at every scrape: `gantry_kube_clusters` (open clusters: one per kubeconfig context) and
   * `gantry_kube_discovery_loads_total` (times their discovery was read from the API servers).
   */
  observeClusters(read: () => { clusters: number; discoveryLoads: number }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'gantry_kube_clusters',
      help: 'Clusters the process keeps a client and discovery cache for (one per kubeconfig context).',
      registers,
      collect() {
        this.set(read().clusters);
      },
    });
    new Counter({
      name: 'gantry_kube_discovery_loads_total',
      help: 'Times API discovery was read from an API server.',
      registers,
      collect() {
        this.reset();
        this.inc(read().discoveryLoads);
      },
    });
  }

  /** Reports the queue of `controller` at every scrape through `read`. */
  observeQueue(controller: string, read: () => QueueGauges): void {
    this.queues.set(controller, read);
  }

  /** One finished reconcile of `namespace/name` (kind as the object's kind), as the manager records it. */
  recordReconcile(
    controller: string,
    object: { kind: string; namespace: string; name: string },
    seconds: number,
    outcome: ReconcileOutcome,
  ): void {
    this.reconcileDuration.observe({ kind: object.kind, name: object.name, namespace: object.namespace }, seconds);
    this.reconcileTotal.inc({ controller, result: outcome });
    if (outcome === 'error') {
      this.reconcileErrors.inc({ controller });
      this.failures.inc({ namespace: object.namespace, name: object.name });
    }
  }

  /** One deployment of the object (an apply of its project), successful or not. For reconcilers. */
  recordDeploy(namespace: string, name: string, succeeded: boolean): void {
    this.deploys.inc({ namespace, name, result: succeeded ? 'success' : 'failure' });
  }

  /** The number of objects found drifted by the object's last drift detection (0: none). For reconcilers. */
  recordDrift(namespace: string, name: string, driftedObjects: number): void {
    this.drifted.set({ namespace, name }, driftedObjects);
  }

  /** Whether this replica leads the Lease `name` (1) or stands by (0). */
  recordLeader(name: string, leading: boolean): void {
    this.leader.set({ name }, leading ? 1 : 0);
  }

  /** Removes every per-object series of a deleted object. */
  forgetObject(object: { kind: string; namespace: string; name: string }): void {
    const { namespace, name } = object;
    this.reconcileDuration.remove({ kind: object.kind, name, namespace });
    this.failures.remove({ namespace, name });
    for (const result of ['success', 'failure']) this.deploys.remove({ namespace, name, result });
    this.drifted.remove({ namespace, name });
  }

  /** The exposition text and its content type, for /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
