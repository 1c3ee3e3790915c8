/**
 * `gantry webui`: the web UI's KluctlDeployments and Live pages for one kubeconfig context, without a fleet server
 * (as `kluctl webui run`): the browser reaches the cluster through this process, with the kubeconfig's credentials.
 * Like Kluctl's webui without its auth, it has no login, so it listens on 127.0.0.1 unless told otherwise.
 */
import { Command, Option } from 'commander';
import { loadKubeConfig } from '../kube/client.ts';
import { createLogger } from '../logger.ts';
import { startWebUi } from '../webui/index.ts';
import { parseAddress } from './options.ts';
import { runUntilSignalled } from './signals.ts';
import type { Address } from '../ports.ts';

interface WebUiFlags {
  kubeconfig?: string;
  context?: string;
  listen: Address;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export function webuiCommand(): Command {
  return new Command('webui')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG')
    .option('--context <name>', 'kubeconfig context to use instead of the current one')
    .addOption(
      new Option('--listen <address>', 'host:port to serve the UI on (port 0 picks a free one)')
        .argParser(parseAddress)
        .default(parseAddress('127.0.0.1:8080'), '127.0.0.1:8080'),
    )
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('warn'))
    .addHelpText(
      'after',
      `
The UI shows the context's KluctlDeployments (status, results with diffs, drift; reconcile, diff, deploy, prune,
validate, suspend, resume, approve) and its namespaces and objects, reached with the kubeconfig's credentials.
It has no login, as Kluctl's webui without auth: anyone who reaches the port acts as the kubeconfig's user. Keep
the default 127.0.0.1 and do not expose it; for a shared UI with users and roles run \`gantry server\` and agents.`,
    )
    .action((flags: WebUiFlags) => runWebUi(flags));
}

async function runWebUi(flags: WebUiFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context });
  const webui = await startWebUi({ kubeConfig, host: flags.listen.host, port: flags.listen.port, log });
  process.stderr.write(
    `Serving the KluctlDeployments of context ${kubeConfig.getCurrentContext()} at ${webui.url}/ (no login: do not expose it)\n`,
  );
  await runUntilSignalled(log, () => webui.close());
}
