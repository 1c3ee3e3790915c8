/**
 * `gantry operator run`: the fleet's resources in the management cluster reconciled into a Gantry server, with an
 * admin API token read from a file or the environment (never argv). `gantry operator install-crds` applies their
 * CustomResourceDefinitions with server-side apply and waits until the cluster serves their kinds.
 */
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { FleetClient } from '../client/fleet-client.ts';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import { ensureCrdsServed } from '../deploy/crds.ts';
import type { KubeObject } from '../kube/object.ts';
import { createLogger } from '../logger.ts';
import { fleetCrds } from '../install/fleet-crds.ts';
import { OPERATOR_FIELD_MANAGER, startOperator } from '../operator/index.ts';
import { operatorInstallCommand } from './operator-install.ts';
import type { Address } from '../ports.ts';
import { durationArg, parseAddress } from './options.ts';
import { runUntilSignalled } from './signals.ts';

interface OperatorRunFlags {
  allowCrossNamespaceRefs?: boolean;
  server?: string;
  tokenFile?: string;
  kubeconfig?: string;
  context?: string;
  workers: number;
  statusInterval: number;
  leaderElection: boolean;
  metricsBindAddress: Address;
  healthProbeBindAddress: Address;
  leaderElectionNamespace: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export function operatorCommand(): Command {
  return new Command('operator').addCommand(operatorRunCommand()).addCommand(installCrdsCommand()).addCommand(operatorInstallCommand());
}

function operatorRunCommand(): Command {
  return new Command('run')
    .description('run the operator until SIGTERM')
    .option('--server <url>', 'the Gantry server ($GANTRY_SERVER)')
    .option('--token-file <file>', 'file holding an admin API token ($GANTRY_TOKEN)')
    .option('--kubeconfig <file>', 'kubeconfig of the management cluster instead of the in-cluster config / $KUBECONFIG')
    .option('--context <name>', 'kubeconfig context of the management cluster')
    .option('--workers <n>', 'resources reconciled in parallel, per kind', (value) => Number.parseInt(value, 10), 4)
    .option('--status-interval <duration>', "how often a resource's status is read again from the server", durationArg, 30_000)
    .option('--metrics-bind-address <address>', 'address of /metrics', parseAddress, parseAddress('127.0.0.1:8080'))
    .option('--health-probe-bind-address <address>', 'address of /healthz and /readyz', parseAddress, parseAddress('127.0.0.1:8081'))
    .option(
      '--allow-cross-namespace-refs',
      "follow references (clusterRef, repositoryRef, configurationRef, valuesFrom, …) and read Secrets in other namespaces than the resource's; refused by default, as Flux's --no-cross-namespace-refs refuses them for multi-tenancy",
    )
    .option('--leader-election', 'elect one active replica through Leases')
    .option('--leader-election-namespace <ns>', 'namespace of the Leases', 'gantry-system')
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .action((flags: OperatorRunFlags) => runOperator(flags));
}

async function runOperator(flags: OperatorRunFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  const server = flags.server ?? process.env['GANTRY_SERVER'];
  const token = flags.tokenFile ? (await readFile(flags.tokenFile, 'utf8')).trim() : process.env['GANTRY_TOKEN'];
  if (!server || !token) {
    process.stderr.write('error: the operator needs --server (or GANTRY_SERVER) and --token-file (or GANTRY_TOKEN)\n');
    process.exitCode = 1;
    return;
  }
  const client = new FleetClient({ server, token });
  try {
    await client.listRepositories();
  } catch (error) {
    process.stderr.write(`error: the server refused the token or cannot be reached: ${(error as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  const operator = await startOperator({
    kubeConfig: loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context }),
    client,
    workers: flags.workers,
    statusIntervalMs: flags.statusInterval,
    metricsAddress: flags.metricsBindAddress,
    probeAddress: flags.healthProbeBindAddress,
    allowCrossNamespaceRefs: flags.allowCrossNamespaceRefs === true,
    ...(flags.leaderElection ? { leaderElection: { namespace: flags.leaderElectionNamespace } } : {}),
    log,
  });
  log.info({ server }, 'operator started');
  await runUntilSignalled(log, () => operator.stop());
}

function installCrdsCommand(): Command {
  return new Command('install-crds')
    .description("apply the CRDs of the fleet's resources (deployments.gantry.dev) to the cluster")
    .option('--kubeconfig <file>', 'kubeconfig instead of $KUBECONFIG')
    .option('--context <name>', 'kubeconfig context')
    .option('--timeout <duration>', 'how long to wait until the cluster serves the new kinds', durationArg, 60_000)
    .action(async (flags: { kubeconfig?: string; context?: string; timeout: number }) => {
      const cluster = new Cluster(new KubeClient(loadKubeConfig(flags)));
      try {
        const names: string[] = [];
        for (const crd of fleetCrds()) {
          const applied = await cluster.apply(crd as KubeObject, { fieldManager: OPERATOR_FIELD_MANAGER, force: true });
          names.push(applied.metadata.name ?? '');
          process.stderr.write(`applied ${applied.metadata.name}\n`);
        }
        // Whoever runs this creates ServiceDeployments next, which fail until the API server serves the new kinds.
        await ensureCrdsServed(cluster, names, { timeoutMs: flags.timeout });
        process.stderr.write(`${names.length} CRD(s) served\n`);
      } finally {
        await cluster.close();
      }
    });
}
