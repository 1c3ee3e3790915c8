/**
 * `npm run cluster -- up|down|status [--name NAME] [--all] [--capi] [-o json]`: the local clusters from the command
 * line (see cluster.ts). Without `--name`, up and down act on the default cluster `local`; `up --capi` also makes it
 * a Cluster API management cluster (scripts/capi); `down --all` stops every cluster; `status` lists every cluster unless `--name` picks one. Progress goes to stderr; `status` prints to stdout.
 */
import { parseArgs } from 'node:util';
import { type ClusterStatus, clusterDown, clusterStatus, clusterUp } from './cluster.ts';
import { clusterLayout, knownClusters } from './layout.ts';
import { capiUp } from '../capi/capi.ts';

const USAGE = 'usage: npm run cluster -- up [--name NAME] [--capi] | down [--name NAME | --all] | status [--name NAME] [-o json]';

function formatStatus(status: ClusterStatus): string {
  if (status.state === 'stopped') return `cluster ${status.name}: stopped\n`;
  const lines = [
    `cluster ${status.name}: ${status.state} at ${status.server} (started ${status.startedAt})`,
    `kubeconfig: ${status.kubeconfig} (context gantry-${status.name})`,
  ];
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

async function statuses(name: string | undefined): Promise<ClusterStatus[]> {
  const names = name === undefined ? await knownClusters() : [name];
  return await Promise.all(names.map((each) => clusterStatus(clusterLayout(each))));
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { output: { type: 'string', short: 'o' }, name: { type: 'string' }, all: { type: 'boolean' }, capi: { type: 'boolean' } },
  });
  const report = (line: string) => console.error(`cluster${values.name === undefined ? '' : ` ${values.name}`}: ${line}`);
  const command = positionals.length === 1 ? positionals[0] : undefined;
  if (values.all && command !== 'down') throw new Error(`--all applies to down only; ${USAGE}`);
  if (values.capi && command !== 'up') throw new Error(`--capi applies to up only; ${USAGE}`);
  if (values.all && values.name !== undefined) throw new Error(`down takes --name or --all, not both; ${USAGE}`);
  switch (command) {
    case 'up': {
      const options = { layout: clusterLayout(values.name), report };
      const state = values.capi ? await capiUp(options) : await clusterUp(options);
      console.error(`cluster: export KUBECONFIG=${state.kubeconfig}`);
      return;
    }
    case 'down':
      for (const name of values.all ? await knownClusters() : [values.name]) {
        await clusterDown({ layout: clusterLayout(name), report: (line) => console.error(`cluster ${name ?? 'local'}: ${line}`) });
      }
      return;
    case 'status': {
      const found = await statuses(values.name);
      if (values.output === 'json') process.stdout.write(`${JSON.stringify(values.name === undefined ? found : found[0], null, 2)}\n`);
      else if (values.output === undefined) process.stdout.write(found.map(formatStatus).join(''));
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
