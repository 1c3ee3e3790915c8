/**
 * `npm run cluster -- up|down|status [-o json]`: the local cluster from the command line (see cluster.ts).
 * Progress goes to stderr; `status` prints to stdout.
 */
import { parseArgs } from 'node:util';
import { type ClusterStatus, clusterDown, clusterStatus, clusterUp } from './cluster.ts';

const USAGE = 'usage: npm run cluster -- up | down | status [-o json]';

function formatStatus(status: ClusterStatus): string {
  if (status.state === 'stopped') return 'cluster: stopped\n';
  const lines = [`cluster: ${status.state} at ${status.server} (started ${status.startedAt})`, `kubeconfig: ${status.kubeconfig}`];
  let total = 0;
  for (const component of status.components) {
    total += component.rssBytes ?? 0;
    const memory = component.rssBytes === undefined ? '' : `  ${mebibytes(component.rssBytes)} RSS`;
    lines.push(
      `  ${component.name.padEnd(24)} pid ${String(component.pid).padEnd(8)} ${component.running ? 'running' : 'gone   '}${memory}`,
    );
  }
  lines.push(`  ${'total'.padEnd(24)} ${' '.repeat(21)}  ${mebibytes(total)} RSS`);
  return `${lines.join('\n')}\n`;
}

function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { output: { type: 'string', short: 'o' } },
  });
  const report = (line: string) => console.error(`cluster: ${line}`);
  switch (positionals.length === 1 ? positionals[0] : undefined) {
    case 'up': {
      const state = await clusterUp({ report });
      console.error(`cluster: export KUBECONFIG=${state.kubeconfig}`);
      return;
    }
    case 'down':
      await clusterDown({ report });
      return;
    case 'status': {
      const status = await clusterStatus();
      if (values.output === 'json') process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      else if (values.output === undefined) process.stdout.write(formatStatus(status));
      else throw new Error(`unknown output format ${values.output}; ${USAGE}`);
      return;
    }
    default:
      throw new Error(USAGE);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
