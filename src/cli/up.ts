/**
 * `gantry up --dir DIR [--git-url URL] [--context CTX] [--runtime local|cluster]`: the fleet repository written,
 * pushed and bootstrapped onto the management cluster (src/up/up.ts); `gantry down` stops what `up --runtime local`
 * started. Both print a summary, or JSON with `-o json`.
 */
import path from 'node:path';
import { Command, Option } from 'commander';
import { saveLogin } from '../client/login.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { defaultStateDir, localDown, type Runtime, up, UP_NAMESPACE, type UpResult } from '../up/index.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { addOutputFlag, durationArg } from './options.ts';
import { withCliEngine } from './run-action.ts';
import { messageOf } from '../problems.ts';

interface UpFlags {
  dir: string;
  gitUrl?: string;
  kubeconfig?: string;
  context?: string;
  runtime: Runtime;
  image: string;
  managementCluster: string;
  stateDir?: string;
  timeout: number;
  output: 'text' | 'json';
}

export function upCommand(): Command {
  const command = new Command('up')
    .requiredOption('--dir <dir>', 'the repository (made with git init when it is none)')
    .option('--git-url <url>', 'the remote the server fetches the repository from (default: its origin; added as origin when it has none)')
    .option('--kubeconfig <file>', 'kubeconfig of the management cluster instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', 'kubeconfig context of the management cluster (default: the current context)')
    .addOption(
      new Option(
        '--runtime <runtime>',
        'run the server, operator and agent in the cluster, or as local processes (clusters without container runtime)',
      )
        .choices(['cluster', 'local'])
        .default('cluster'),
    )
    .option(
      '--image <ref>',
      "Gantry's image for the server, operator and agent (runtime cluster)",
      `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`,
    )
    .option('--management-cluster <name>', "the management cluster's name on the server", 'mgmt')
    .option('--state-dir <dir>', 'where local processes keep data, logs and tokens (default: $XDG_STATE_HOME/gantry/up/<context>)')
    .option('--timeout <duration>', 'limit for readiness waits', durationArg, 600_000);
  return addOutputFlag(command).action(async (flags: UpFlags) => {
    try {
      const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig });
      const context = flags.context ?? kubeConfig.getCurrentContext();
      if (!context) throw new Error('no kubeconfig context: give --context');
      const result = await withCliEngine((run) =>
        up({
          dir: path.resolve(flags.dir),
          gitUrl: flags.gitUrl,
          kubeConfig,
          kubeconfigFile: flags.kubeconfig,
          context,
          runtime: flags.runtime,
          image: flags.image,
          managementCluster: flags.managementCluster,
          stateDir: flags.stateDir ?? defaultStateDir(context),
          timeoutMs: flags.timeout,
          engine: run.engine,
          progress: run.progress,
        }),
      );
      if (result.server) await saveLogin({ server: result.server.url, token: result.server.adminToken }, process.env);
      printUp(result, flags.output);
    } catch (error) {
      process.stderr.write(`error: ${messageOf(error)}\n`);
      process.exitCode = 1;
    }
  });
}

export function downCommand(): Command {
  const command = new Command('down')
    .option('--context <name>', 'kubeconfig context `up` ran against (default: the current context)')
    .option('--kubeconfig <file>', 'kubeconfig the context is read from')
    .option('--state-dir <dir>', 'the state folder `up` used');
  return addOutputFlag(command).action(async (flags: { context?: string; kubeconfig?: string; stateDir?: string; output: string }) => {
    try {
      const context = flags.context ?? loadKubeConfig({ kubeconfig: flags.kubeconfig }).getCurrentContext();
      const stopped = await localDown(flags.stateDir ?? defaultStateDir(context));
      if (flags.output === 'json') process.stdout.write(`${JSON.stringify({ stopped })}\n`);
      else process.stdout.write(stopped.length > 0 ? `stopped ${stopped.join(', ')}\n` : 'nothing was running\n');
    } catch (error) {
      process.stderr.write(`error: ${messageOf(error)}\n`);
      process.exitCode = 1;
    }
  });
}

function printUp(result: UpResult, output: 'text' | 'json'): void {
  const summary = {
    repository: { ...result.repository },
    bootstrap: {
      newObjects: result.bootstrap.newObjects.length,
      changedObjects: result.bootstrap.changedObjects.length,
      deletedObjects: result.bootstrap.deletedObjects.length,
    },
    ...(result.server ? { server: result.server.url } : {}),
  };
  if (output === 'json') {
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  const { files } = result.repository;
  const lines = [
    `repository ${result.repository.dir} → ${result.repository.url} (${result.repository.branch})`,
    `  files: ${files.created.length} created, ${files.upgraded.length} upgraded, ${files.unchanged.length} unchanged, ${files.kept.length} kept (edited)`,
    ...files.kept.map((file) => `  kept ${file}`),
    `  ${result.repository.commit ? `pushed ${result.repository.commit.slice(0, 12)}` : 'nothing to push'}`,
    `bootstrap: ${summary.bootstrap.newObjects} new, ${summary.bootstrap.changedObjects} changed, ${summary.bootstrap.deletedObjects} deleted`,
    ...(result.server
      ? [`server ${result.server.url} (logged in; gantry cluster list, gantry service list)`]
      : [
          `server in the cluster: kubectl -n ${UP_NAMESPACE} port-forward svc/gantry-server 8090, then gantry login --server http://127.0.0.1:8090`,
          `  --token "$(kubectl -n ${UP_NAMESPACE} get secret gantry-admin-token -o jsonpath='{.data.token}' | base64 -d)"`,
        ]),
    'add a ServiceDeployment to services/ and push to deploy it',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
