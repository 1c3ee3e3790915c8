/**
 * `gantry agent run`: the fleet's pull agent for the cluster of a kubeconfig context (in the cluster, or beside it
 * for development and tests). It dials out to the server with its cluster's deploy token, read from a file, a Secret
 * or the environment (never argv, where process lists show it); a token from a file or a Secret is rotated when the
 * server asks, and the new one stored there (agent/token-store.ts).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AGENT_FIELD_MANAGER,
  type AgentOptions,
  fileTokenStore,
  secretTokenStore,
  serveHealth,
  startAgent,
  startElectedAgent,
  type TokenStore,
} from '../agent/index.ts';
import { AgentClient } from '../client/agent-client.ts';
import { Engine } from '../engine.ts';
import { defaultCacheDir, serverEngineConfig } from '../engine-config.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { createLogger } from '../logger.ts';
import { agentInstallCommand } from './agent-install.ts';
import { agentRolloutCommand, agentUpgradeCommand } from './agent-upgrade.ts';
import { AGENT_IMAGE_ENV, AGENT_NAME, AGENT_NAMESPACE } from '../install/agent.ts';
import type { AgentDeployment } from '../api/services.ts';
import { runUntilSignalled } from './signals.ts';
import { durationArg, parseAddress } from './options.ts';

interface AgentRunFlags {
  server?: string;
  tokenFile?: string;
  tokenSecret?: string;
  kubeconfig?: string;
  context?: string;
  dataDir: string;
  cacheDir?: string;
  pollInterval: number;
  pollJitter: number;
  resyncInterval: number;
  repairBackoff: number;
  pingInterval: number;
  healthInterval: number;
  syncTimeout: number;
  pushChannel: boolean;
  healthAddr?: { host: string; port: number };
  leaderElect?: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export function agentCommand(): Command {
  return new Command('agent')
    .addCommand(agentInstallCommand())
    .addCommand(agentRunCommand())
    .addCommand(agentUpgradeCommand())
    .addCommand(agentRolloutCommand());
}

function agentRunCommand(): Command {
  return new Command('run')
    .description('run the agent until SIGTERM')
    .option('--server <url>', 'the Gantry server ($GANTRY_SERVER)')
    .option('--token-file <file>', "file holding the cluster's deploy token ($GANTRY_DEPLOY_TOKEN)")
    .option('--token-secret <namespace/name>', "Secret (key token) in the cluster holding the cluster's deploy token")
    .option('--kubeconfig <file>', 'kubeconfig to use instead of the in-cluster config / $KUBECONFIG')
    .option('--context <name>', 'kubeconfig context of the cluster to manage')
    .option(
      '--data-dir <dir>',
      'downloaded sources (kept across restarts)',
      join(process.env['GANTRY_DATA_DIR'] || join(homedir(), '.local', 'share', 'gantry'), 'agent'),
    )
    .option('--cache-dir <dir>', 'git and chart cache (default: $GANTRY_CACHE_DIR, else ~/.cache/gantry)')
    .option('--poll-interval <duration>', 'how often the server is asked for the services', durationArg, 60_000)
    .option('--poll-jitter <duration>', 'up to this much is added to each poll interval', durationArg, 15_000)
    .option(
      '--resync-interval <duration>',
      'a service is synced again this long after its last sync, to repair drift',
      durationArg,
      10 * 60_000,
    )
    .option(
      '--repair-backoff <duration>',
      'a drift repair after another waits this long (the third six times as long; a fourth within 10 minutes is held)',
      durationArg,
      5_000,
    )
    .option('--ping-interval <duration>', 'how often the cluster reports its versions', durationArg, 2 * 60_000)
    .option('--health-interval <duration>', 'how often components not yet running are looked at again', durationArg, 5_000)
    .option('--sync-timeout <duration>', 'readiness waits and deletions of one sync', durationArg, 5 * 60_000)
    .option('--no-push-channel', 'poll only: no WebSocket to the server')
    .option('--health-addr <host:port>', 'serve GET /healthz and /readyz here once the server took the deploy token', parseAddress)
    .option(
      '--leader-elect',
      "campaign for the Lease gantry-agent in --token-secret's namespace: only its holder works (a rolling upgrade's two pods)",
    )
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .action((flags: AgentRunFlags) => runAgent(flags));
}

async function runAgent(flags: AgentRunFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  const server = flags.server ?? process.env['GANTRY_SERVER'];
  if (flags.tokenFile && flags.tokenSecret) {
    process.stderr.write('error: give --token-file or --token-secret, not both\n');
    process.exitCode = 1;
    return;
  }
  const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context });
  const engine = new Engine(
    serverEngineConfig({
      cacheDir: flags.cacheDir ?? defaultCacheDir(process.env),
      allowSystemEnvHint: "the agent shows services' templates no variables of its own",
      onTemplateStderr: (line) => log.debug({ component: 'jinja2' }, line),
      onNotice: (line) => log.info({ component: 'python' }, line),
    }),
  );
  const found = await agentToken(flags, engine, kubeConfig).catch((error: Error) => {
    process.stderr.write(`error: ${error.message}\n`);
    return undefined;
  });
  if (!server || !found) {
    if (!server) process.stderr.write('error: the agent needs --server (or GANTRY_SERVER)\n');
    process.exitCode = 1;
    await engine.close();
    return;
  }
  const { token, store: tokenStore } = found;
  const client = new AgentClient({ server, token });
  const identity = await client.cluster().catch((error: Error) => {
    process.stderr.write(`error: the server refused the deploy token or cannot be reached: ${error.message}\n`);
    return undefined;
  });
  if (!identity) {
    process.exitCode = 1;
    await engine.close();
    return;
  }
  const health = flags.healthAddr ? await serveHealth(flags.healthAddr).catch((error: Error) => error) : undefined;
  if (health instanceof Error) {
    process.stderr.write(`error: --health-addr: ${health.message}\n`);
    process.exitCode = 1;
    await engine.close();
    return;
  }
  log.info({ server, cluster: identity.name, context: kubeConfig.getCurrentContext() }, 'agent started');
  const options: AgentOptions = {
    client,
    tokenStore,
    deployment: deploymentOf(server, flags.tokenSecret, process.env),
    pushChannel: flags.pushChannel,
    engine,
    kubeConfig,
    dataDir: flags.dataDir,
    log,
    pollIntervalMs: flags.pollInterval,
    jitterMs: flags.pollJitter,
    resyncIntervalMs: flags.resyncInterval,
    repairBackoffMs: flags.repairBackoff,
    pingIntervalMs: flags.pingInterval,
    healthIntervalMs: flags.healthInterval,
    syncTimeoutMs: flags.syncTimeout,
  };
  const lease = { namespace: flags.tokenSecret?.split('/')[0] ?? AGENT_NAMESPACE, name: AGENT_NAME };
  const agent = flags.leaderElect ? startElectedAgent(options, lease) : startAgent(options);
  await runUntilSignalled(log, async () => {
    await agent.stop();
    health?.close();
    await engine.close();
  });
}

/**
 * How the agent runs when it is the install's Deployment, which sets $GANTRY_AGENT_IMAGE (install/agent.ts) and
 * --token-secret; undefined otherwise (a process beside the cluster, which the server does not keep as a service).
 */
function deploymentOf(server: string, tokenSecret: string | undefined, env: NodeJS.ProcessEnv): AgentDeployment | undefined {
  return env[AGENT_IMAGE_ENV] && tokenSecret ? { server, tokenSecret } : undefined;
}

/**
 * The deploy token and where it is kept: --token-file, --token-secret, else $GANTRY_DEPLOY_TOKEN (kept nowhere).
 * @throws Error naming the file or Secret that cannot be read, or saying that no token was given.
 */
async function agentToken(
  flags: AgentRunFlags,
  engine: Engine,
  kubeConfig: KubeConfig,
): Promise<{ token: string; store: TokenStore | undefined }> {
  const store = flags.tokenFile
    ? fileTokenStore(flags.tokenFile)
    : flags.tokenSecret
      ? secretTokenStore(engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext()), flags.tokenSecret, AGENT_FIELD_MANAGER)
      : undefined;
  if (store) return { token: await store.read(), store };
  const token = process.env['GANTRY_DEPLOY_TOKEN'];
  if (!token) throw new Error('the agent needs --token-file, --token-secret or GANTRY_DEPLOY_TOKEN');
  return { token, store: undefined };
}
