/**
 * `gantry controller run`: the GitOps controller process, with the flags of Kluctl's `kluctl controller run` (and
 * controller-runtime's): it reconciles every KluctlDeployment (pull, render, deploy when the result changed, prune,
 * validate, detect drift), serves /metrics and the git webhook receiver on the metrics address and /healthz and
 * /readyz on the probe address, and logs JSON lines. It runs in the cluster (install/) or, for development, beside
 * it with a kubeconfig.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../duration.ts';
import { GROUP, KIND, PLURAL, REQUEST_ANNOTATIONS, VERSION, type KluctlDeployment } from '../api/kluctl-deployment.ts';
import { FIELD_MANAGER } from '../deploy/deploy.ts';
import { AlertDispatcher } from '../gitops/alerts.ts';
import { matchingDeployments } from '../gitops/repo-url.ts';
import { registerWebhookRoutes } from '../gitops/webhooks.ts';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import { EventRecorder } from '../controller/kluctl-deployment/events.ts';
import { reconcileKluctlDeployment, type ReconcilerDeps } from '../controller/kluctl-deployment/reconciler.ts';
import { needsReconcile } from '../controller/kluctl-deployment/predicates.ts';
import { gitUrlOf } from '../controller/kluctl-deployment/source.ts';
import { createLogger, type Logger } from '../controller/logger.ts';
import { runController, type ControllerHandle, type ExtraWatch } from '../controller/manager.ts';
import { startServer, type ControllerServer } from '../controller/server.ts';
import { splitKey } from '../controller/watcher.ts';
import { FLUX_SOURCE_GROUP, sweepFluxArtifacts } from '../source/flux-artifact.ts';
import { GitCache } from '../source/git-cache.ts';
import { JinjaPool } from '../template/jinja-pool.ts';

interface ControllerRunFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  metricsBindAddress: Address;
  healthProbeBindAddress: Address;
  concurrency: number;
  commandResultNamespace: string;
  keepCommandResultsCount: number;
  webhookSecretFile?: string;
  cacheDir?: string;
  gitRefreshInterval: number;
  cacheMaxAge: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

interface Address {
  host: string;
  port: number;
}

/** How often a repository shared by many deployments is fetched at most; a webhook push bypasses it. */
const DEFAULT_GIT_REFRESH_MS = 5_000;
const LEASE_NAME = 'gantry-controller';
/** Git snapshots, mirrors and Flux artifacts unused this long are removed (far beyond any reconcile's timeout). */
const DEFAULT_CACHE_MAX_AGE_MS = 24 * 3600_000;
const CACHE_SWEEP_EVERY_MS = 10 * 60_000;

export function controllerRunCommand(): Command {
  return new Command('run')
    .description('run the controller: reconcile KluctlDeployments until SIGTERM')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of the in-cluster config / $KUBECONFIG')
    .option('--context <name>', 'kubeconfig context to use')
    .option('--namespace <name>', 'watch only this namespace (default: all namespaces)')
    .option('--leader-elect', 'elect a leader among replicas through a Lease; only the leader reconciles')
    .option('--leader-election-namespace <name>', 'namespace of the Lease (default: $POD_NAMESPACE, else gantry-system)')
    .option(
      '--metrics-bind-address <address>',
      'address of /metrics and the git webhook receiver',
      parseAddress,
      parseAddress('127.0.0.1:8080'),
    )
    .option('--health-probe-bind-address <address>', 'address of /healthz and /readyz', parseAddress, parseAddress('127.0.0.1:8081'))
    .option('--concurrency <n>', 'KluctlDeployments reconciled in parallel', parsePositive, 4)
    .option('--command-result-namespace <name>', 'namespace where command results are kept', 'gantry-results')
    .option('--keep-command-results-count <n>', 'command results kept per deployment', parsePositive, 5)
    .option(
      '--webhook-secret-file <file>',
      'enable POST /hooks/git (GitHub, GitLab, Gitea push events) with the secret in this file (off while the file does not exist)',
    )
    .option('--cache-dir <dir>', 'git and artifact cache (default: $GANTRY_CACHE_DIR, else ~/.cache/gantry)')
    .option(
      '--git-refresh-interval <duration>',
      'a repository is fetched at most this often (a webhook push bypasses it)',
      parseDurationFlag,
      DEFAULT_GIT_REFRESH_MS,
    )
    .option(
      '--cache-max-age <duration>',
      'cached git commits, mirrors and Flux artifacts unused this long are removed',
      parseDurationFlag,
      DEFAULT_CACHE_MAX_AGE_MS,
    )
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .action((flags: ControllerRunFlags) => runControllerProcess(flags));
}

async function runControllerProcess(flags: ControllerRunFlags): Promise<void> {
  const logger = createLogger({ level: flags.logLevel });
  const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context });
  const cluster = new Cluster(new KubeClient(kubeConfig));
  const cacheRoot = flags.cacheDir ?? process.env['GANTRY_CACHE_DIR'] ?? path.join(os.homedir(), '.cache', 'gantry');
  const git = new GitCache({ root: path.join(cacheRoot, 'git'), refreshMs: flags.gitRefreshInterval });
  const sweeper = startCacheSweeper(git, path.join(cacheRoot, 'artifacts'), flags.cacheMaxAge, logger);
  const renderer = new JinjaPool({ onStderr: (line) => logger.debug({ component: 'jinja2' }, line) });
  const deps: ReconcilerDeps = {
    cluster,
    kubeConfig,
    renderer,
    git,
    cacheRoot: path.join(cacheRoot, 'artifacts'),
    resultsNamespace: flags.commandResultNamespace,
    keepResults: flags.keepCommandResultsCount,
    events: new EventRecorder(cluster, {
      component: 'gantry-controller',
      fieldManager: FIELD_MANAGER,
      onError: (error) => logger.warn({ err: error }, 'an event could not be recorded'),
    }),
    notify: alertSender(cluster, logger),
  };
  const webhookSecret = flags.webhookSecretFile && (await readWebhookSecret(flags.webhookSecretFile, logger));
  const controller = await runController({
    cluster,
    resource: { group: GROUP, version: VERSION, plural: PLURAL },
    name: 'kluctldeployment',
    namespace: flags.namespace,
    workers: flags.concurrency,
    leaderElection: flags.leaderElect
      ? { namespace: flags.leaderElectionNamespace ?? process.env['POD_NAMESPACE'] ?? 'gantry-system', name: LEASE_NAME }
      : undefined,
    server: {
      ...flags.metricsBindAddress,
      routes: webhookSecret
        ? (app, handle) => registerWebhookRoutes(app, { secret: webhookSecret, onPush: (urls) => onPush(urls, handle, git, cluster) })
        : undefined,
    },
    logger,
    extraWatches: await fluxSourceWatches(cluster, flags.namespace),
    updateFilter: needsReconcile,
    reconcile: (key, _object, signal, context) =>
      reconcileKluctlDeployment(splitKey(key), deps, { log: context.log, metrics: context.metrics, signal }),
  });
  const probes = await startProbeServer(flags.healthProbeBindAddress, controller, logger);
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      clearInterval(sweeper);
      void controller
        .stop()
        .then(() => Promise.all([probes.close(), renderer.close()]))
        .then(() => resolve());
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
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
 * The webhook secret, or undefined (receiver off) when its file does not exist: the install mounts it from an
 * optional Secret, which a cluster without webhooks does not have.
 * @throws Error when the file exists but cannot be read, or is empty.
 */
async function readWebhookSecret(file: string, logger: Logger): Promise<string | undefined> {
  const content = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (content === undefined) {
    logger.info({ file }, 'git webhook receiver off: the secret file does not exist');
    return undefined;
  }
  if (!content.trim()) throw new Error(`--webhook-secret-file ${file} is empty`);
  return content.trim();
}

/** Sweeps the caches now and then, so a long-running controller keeps what its deployments use, not every commit. */
function startCacheSweeper(git: GitCache, artifactsRoot: string, maxAgeMs: number, logger: Logger): NodeJS.Timeout {
  const log = logger.child({ component: 'cache' });
  const sweep = async () => {
    const removed = (await git.sweep(maxAgeMs)) + (await sweepFluxArtifacts(artifactsRoot, maxAgeMs));
    if (removed > 0) log.info({ removed }, 'removed unused cache entries');
  };
  const timer = setInterval(
    () => void sweep().catch((error: unknown) => log.warn({ err: error }, 'sweeping the cache failed')),
    Math.min(maxAgeMs, CACHE_SWEEP_EVERY_MS),
  );
  timer.unref();
  return timer;
}

/** Alerts are sent in the background: a slow receiver must not hold up a reconcile. */
function alertSender(cluster: Cluster, logger: Logger): ReconcilerDeps['notify'] {
  const alerts = new AlertDispatcher(cluster, { log: logger.child({ component: 'alerts' }), fieldManager: FIELD_MANAGER });
  return (event) => void alerts.notify(event);
}

/**
 * A push to a repository reconciles every deployment sourced from it now, fetching the repository afresh. A standby
 * replica cannot reconcile, so it asks the leader through the object (Kluctl's reconcile request annotation).
 */
async function onPush(urls: string[], controller: ControllerHandle, git: GitCache, cluster: Cluster): Promise<void> {
  const cached = [...controller.cache].map(([key, object]) => ({ key, spec: object['spec'] as KluctlDeployment['spec'] }));
  for (const deployment of matchingDeployments(cached, urls)) {
    const url = gitUrlOf(deployment);
    if (url) git.expire(url);
    if (controller.isLeader()) controller.enqueue(deployment.key);
    else {
      const annotations = { [REQUEST_ANNOTATIONS.reconcile]: new Date().toISOString() };
      await cluster.patchMerge(
        { group: GROUP, version: VERSION, kind: KIND, ...splitKey(deployment.key) },
        { metadata: { annotations } },
        { fieldManager: FIELD_MANAGER },
      );
    }
  }
}

/**
 * When Flux's source-controller runs in the cluster, a new artifact of a GitRepository reconciles the deployments
 * whose sourceRef names it (as Flux's kustomize-controller follows its sources).
 */
async function fluxSourceWatches(cluster: Cluster, namespace: string | undefined): Promise<ExtraWatch[]> {
  const served = await cluster.discovery.find(FLUX_SOURCE_GROUP, 'v1', 'GitRepository');
  if (!served) return [];
  return [
    {
      resource: { group: FLUX_SOURCE_GROUP, version: 'v1', plural: served.resource },
      // A controller limited to one namespace may only be allowed to watch there.
      namespace,
      map: (key, _object, primaries) => {
        const source = splitKey(key);
        return [...primaries]
          .filter(([, object]) => {
            const ref = (object['spec'] as KluctlDeployment['spec']).sourceRef;
            return (
              ref?.kind === 'GitRepository' && ref.name === source.name && (ref.namespace ?? object.metadata.namespace) === source.namespace
            );
          })
          .map(([primaryKey]) => primaryKey);
      },
    },
  ];
}

/** `host:port` as controller-runtime takes it; an empty host (`:8080`) listens on every interface. */
function parseAddress(text: string): Address {
  const match = /^(.*):(\d+)$/.exec(text);
  if (!match) throw new InvalidArgumentError(`'${text}' is not an address (expected host:port or :port)`);
  const host = match[1] === '' ? '0.0.0.0' : match[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(match[2]) };
}

function parseDurationFlag(text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function parsePositive(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`'${text}' is not a positive integer`);
  return value;
}
