/**
 * `gantry controller run`: the GitOps controller process, with the flags of Kluctl's `kluctl controller run` (and
 * controller-runtime's): it reconciles every KluctlDeployment (pull, render, deploy when the result changed, prune,
 * validate, detect drift), serves /metrics and the git webhook receiver on the metrics address and /healthz and
 * /readyz on the probe address, and logs JSON lines. It runs in the cluster (install/) or, for development, beside
 * it with a kubeconfig.
 */
import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runUntilSignalled } from './signals.ts';
import { durationArg, parseAddress, positiveIntegerArg } from './options.ts';
import { startKluctlController } from '../controller/index.ts';
import type { Address } from '../ports.ts';
import { createLogger, type Logger } from '../logger.ts';
import { Engine } from '../engine.ts';
import { defaultCacheDir, serverEngineConfig } from '../engine-config.ts';
import { loadKubeConfig } from '../kube/client.ts';

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
  allowSystemEnvVar: string[];
  kubeApiQps: number;
  kubeApiBurst: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

/** How often a repository shared by many deployments is fetched at most; a webhook push bypasses it. */
const DEFAULT_GIT_REFRESH_MS = 5_000;
/** Git snapshots, mirrors and Flux artifacts unused this long are removed (far beyond any reconcile's timeout). */
const DEFAULT_CACHE_MAX_AGE_MS = 24 * 3600_000;

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
    .option('--concurrency <n>', 'KluctlDeployments reconciled in parallel', positiveIntegerArg, 4)
    .option('--command-result-namespace <name>', 'namespace where command results are kept', 'gantry-results')
    .option('--keep-command-results-count <n>', 'command results kept per deployment', positiveIntegerArg, 5)
    .option(
      '--webhook-secret-file <file>',
      'enable POST /hooks/git (GitHub, GitLab, Gitea push events) with the secret in this file (off while the file does not exist)',
    )
    .option('--cache-dir <dir>', 'git and artifact cache (default: $GANTRY_CACHE_DIR, else ~/.cache/gantry)')
    .option(
      '--git-refresh-interval <duration>',
      'a repository is fetched at most this often (a webhook push bypasses it)',
      durationArg,
      DEFAULT_GIT_REFRESH_MS,
    )
    .option(
      '--cache-max-age <duration>',
      'cached git commits, mirrors and Flux artifacts unused this long are removed',
      durationArg,
      DEFAULT_CACHE_MAX_AGE_MS,
    )
    .option(
      '--allow-system-env-var <name>',
      "an environment variable of the controller that projects' systemEnvVars sources may read (repeatable; none by default)",
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--kube-api-qps <n>', 'requests a second to one API server, on average (client-go QPS)', positiveNumberArg, 50)
    .option('--kube-api-burst <n>', 'requests to one API server at once (client-go burst)', positiveIntegerArg, 300)
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .action((flags: ControllerRunFlags) => runControllerProcess(flags));
}

async function runControllerProcess(flags: ControllerRunFlags): Promise<void> {
  const logger = createLogger({ level: flags.logLevel });
  const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context });
  const engine = new Engine(
    serverEngineConfig({
      cacheDir: flags.cacheDir ?? defaultCacheDir(process.env),
      allowedSystemEnv: flags.allowSystemEnvVar,
      allowSystemEnvHint: `the controller shows templates only the variables named by --allow-system-env-var (${flags.allowSystemEnvVar.join(', ') || 'none'})`,
      kubeApi: { qps: flags.kubeApiQps, burst: flags.kubeApiBurst },
      onTemplateStderr: (line) => logger.debug({ component: 'jinja2' }, line),
      onNotice: (line) => logger.info({ component: 'python' }, line),
      gitRefreshMs: flags.gitRefreshInterval,
    }),
  );
  const controller = await startKluctlController({
    kubeConfig,
    engine,
    namespace: flags.namespace,
    workers: flags.concurrency,
    leaderElection: flags.leaderElect
      ? { namespace: flags.leaderElectionNamespace ?? process.env['POD_NAMESPACE'] ?? 'gantry-system' }
      : undefined,
    resultsNamespace: flags.commandResultNamespace,
    keepResults: flags.keepCommandResultsCount,
    metricsAddress: flags.metricsBindAddress,
    webhookSecret: flags.webhookSecretFile && (await readWebhookSecret(flags.webhookSecretFile, logger)),
    probeAddress: flags.healthProbeBindAddress,
    cacheMaxAgeMs: flags.cacheMaxAge,
    logger,
  });
  await runUntilSignalled(logger, async () => {
    await controller.stop();
    await engine.close();
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

function positiveNumberArg(text: string): number {
  const value = Number(text);
  if (!(value > 0)) throw new InvalidArgumentError(`'${text}' is not a positive number`);
  return value;
}
