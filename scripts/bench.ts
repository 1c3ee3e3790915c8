/**
 * `npm run bench`: Gantry on the local cluster, every figure against a baseline measured in the same run and
 * reported as a ratio to it. Four parts (`--only cli|controller|fleet|render` runs one of them):
 *
 * cli: Gantry against `kubectl apply --server-side`. Workload: microservices-demo/3-templating-and-multi-env,
 * target `test`.
 * - fresh deploy, apply only: `gantry deploy --no-wait` vs `kubectl apply --server-side -f <rendered>`
 * - fresh deploy with readiness: `gantry deploy` vs kubectl apply + `kubectl wait` for every Deployment and
 *   StatefulSet to be ready
 * - no-op redeploy: a second `gantry deploy` vs a second kubectl apply. It renders again: the objects Helm read
 *   during the first render (lookups and its ownership check) have been created since.
 * - no-op redeploy, again: a third `gantry deploy`, which reuses the second one's render, vs a third kubectl apply
 * - fresh deploy, render reused: `gantry deploy --no-wait` into the emptied namespace again, reusing the render an
 *   untimed deploy into the empty namespace just made (its Helm lookups answer the same), vs the fresh kubectl apply:
 *   what applying alone costs, with the render given for free as kubectl's is
 * - startup: `gantry --help` and `gantry --version` vs `kubectl version --client`
 * Gantry's times include rendering (Jinja2, Helm, kustomize); kubectl gets the rendered file for free. The fresh
 * deploys render with `--no-render-cache`, so that an earlier run's render of the same empty namespace is not reused.
 * The namespace is deleted before each fresh deploy.
 *
 * controller: the GitOps controller (`gantry controller run`): no-op reconcile time, commit→applied latency by
 * webhook and by polling, and time, CPU and memory for 100 KluctlDeployments (`--deployments N`, the controller
 * that runs them with `--controller-flags='--concurrency 10 --kube-api-qps 500'`), and the idle RSS after `--cycles` (3)
 * create/delete cycles of them; see bench-controller.ts.
 *
 * fleet: the real `gantry server` and agents; see bench-fleet.ts. load: one server on SQLite and one on PostgreSQL
 * with `--agents` (default 10,000) simulated agents (scripts/bench/agent-load.ts, child processes: real deploy
 * tokens, real WebSockets, real polls) polling every `--interval` (30) + up to `--jitter` (5) seconds, measured over
 * `--window` (90) seconds: polls per second held, p50/p99 poll latency, time for a kick to reach every agent,
 * the server's CPU and RSS against Plural's "1100 clusters with just over 3 CPU" and the goal of 1 GiB. apply:
 * commit→applied on the clusters dev and prod by push and by polling (p50, p95) against the controller's webhook
 * path measured in the same run, previews on 2 and on 10 clusters, a three-wave rollout against the sum of its soaks,
 * and the agent's RSS idle and applying the microservices demo against Plural's agent's 600 MiB request.
 * replicas: three servers on one PostgreSQL with `--replica-agents` (default 30,000) simulated agents spread over
 * them, the same window: polls held, p50/p99, each replica's CPU and RSS, PostgreSQL's CPU, and the kick to every
 * agent through whichever replica holds its socket. `--fleet-part load|replicas|apply|agents` runs one part.
 *
 * render: `gantry render --offline-kubernetes` of generated projects of 1,000, 5,000 and 20,000 templated ConfigMaps
 * (wall time, peak RSS) against Jinja2 alone and the goal; see bench-render.ts.
 *
 * Each measurement is the median of `--runs` (default 3), unless its row says p50/p95/p99. Progress goes to
 * stderr; each part's table goes to stdout once the part is done.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { run } from '../src/exec.ts';
import { benchController, type ControllerBenchResult } from './bench-controller.ts';
import { benchFleet, type FleetBenchResult } from './bench-fleet.ts';
import { benchRender } from './bench-render.ts';
import { buildCliBundleWhenStale } from './bundle/build.ts';
import { clusterUp } from './cluster/cluster.ts';
import { findExamples, REPO_ROOT } from './examples.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    only: { type: 'string' },
    agents: { type: 'string', default: '10000' },
    'replica-agents': { type: 'string', default: '30000' },
    window: { type: 'string', default: '90' },
    interval: { type: 'string', default: '30' },
    jitter: { type: 'string', default: '5' },
    'fleet-part': { type: 'string' },
    deployments: { type: 'string', default: '100' },
    cycles: { type: 'string', default: '3' },
    'controller-flags': { type: 'string', default: '' },
  },
});
const runs = positive('runs');
const halves = ['cli', 'controller', 'fleet', 'render'];
if (values.only !== undefined && !halves.includes(values.only)) throw new Error(`--only takes ${halves.join(', ')}, not '${values.only}'`);
const fleetPart = values['fleet-part'];
const FLEET_PARTS = ['load', 'replicas', 'apply', 'agents'] as const;
if (fleetPart !== undefined && !(FLEET_PARTS as readonly string[]).includes(fleetPart))
  throw new Error(`--fleet-part takes ${FLEET_PARTS.join(', ')}, not '${fleetPart}'`);
const wanted = (half: string) => values.only === undefined || values.only === half;
const started = performance.now();

const bin = path.join(REPO_ROOT, '.cluster/bin');
const PATH = `${bin}:${process.env['PATH'] ?? ''}`;
// Every part runs bin/gantry.js, which runs the sources instead of a stale bundle: slower, and never reusing a render.
await buildCliBundleWhenStale((line) => console.error(line));
// First, before the local cluster is started: its API servers' idle work alone slowed renders by half on 2 cores.
// A part's table is printed when it is done, so a part that fails later loses none of the earlier ones.
if (wanted('render'))
  console.log(formatTable(await benchRender({ runs, repoRoot: REPO_ROOT, env: { PATH }, report: (line) => console.error(line) })));

const needsCluster = ['cli', 'controller', 'fleet'].some(wanted);
const kubeconfig = needsCluster ? (await clusterUp({ report: (line) => console.error(`cluster: ${line}`) })).kubeconfig : '';
const env = { KUBECONFIG: kubeconfig, PATH };
const kubectl = (args: string[]) => run(path.join(bin, 'kubectl'), args, { env });

const controllerOptions = {
  runs,
  kubeconfig,
  kubectl: path.join(bin, 'kubectl'),
  env: { PATH: env.PATH },
  report: (line: string) => console.error(line),
  deployments: positive('deployments'),
  cycles: positive('cycles'),
  fleetControllerFlags: values['controller-flags'].split(' ').filter(Boolean),
};
if (wanted('cli')) console.log(await benchCli());
if (wanted('controller')) console.log(formatTable(await benchController(controllerOptions)));
if (wanted('fleet'))
  console.log(
    formatTable(
      await benchFleet({
        agents: positive('agents'),
        replicaAgents: positive('replica-agents'),
        windowS: positive('window'),
        intervalS: positive('interval'),
        jitterS: Number(values.jitter),
        part: fleetPart as (typeof FLEET_PARTS)[number] | undefined,
        controller: controllerOptions,
        report: (line) => console.error(line),
      }),
    ),
  );
console.log(`\ntotal bench time ${((performance.now() - started) / 1000).toFixed(0)} s`);

/** The CLI half; returns its report table. */
async function benchCli(): Promise<string> {
  const NAMESPACE = 'ms-demo-test';
  const context = (await kubectl(['config', 'current-context'])).stdout.trim();
  const project = path.join(findExamples(), 'microservices-demo/3-templating-and-multi-env');
  const gantryArgs = ['-t', 'test', '--project-dir', project, '--context', context, '-o', 'json'];
  const gantry = (args: string[]) =>
    run(path.join(REPO_ROOT, 'node_modules/.bin/node'), [path.join(REPO_ROOT, 'bin/gantry.js'), ...args], { env });

  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-bench-'));
  const rendered = path.join(scratch, 'rendered.yaml');
  const clean = () => kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=true', '--timeout=5m']);
  const kubectlApply = () => kubectl(['apply', '--server-side', '-f', rendered]);
  const kubectlWait = () =>
    kubectl(['wait', '-n', NAMESPACE, '--for=jsonpath={.status.readyReplicas}', 'statefulsets', '--all', '--timeout=5m']).then(() =>
      kubectl(['wait', '-n', NAMESPACE, '--for=condition=Available', 'deployments', '--all', '--timeout=5m']),
    );

  /** A deploy into the emptied namespace, after an untimed one there kept its render; @throws if not reused. */
  const freshDeployReusingRender = async (): Promise<number> => {
    await clean();
    await gantry(['deploy', '--no-wait', ...gantryArgs]);
    await clean();
    let stderr = '';
    const seconds = await timed(async () => ({ stderr } = await gantry(['deploy', '--no-wait', ...gantryArgs])));
    if (!/reusing the render/.test(stderr)) throw new Error(`bench: the fresh deploy did not reuse the render:\n${stderr}`);
    return seconds;
  };

  interface Sample {
    gantryNoWait: number;
    gantryFreshReused: number;
    gantryFresh: number;
    gantryNoop: number;
    gantryNoopAgain: number;
    kubectlFresh: number;
    kubectlFreshWait: number;
    kubectlNoop: number;
    kubectlNoopAgain: number;
    gantryHelp: number;
    gantryVersion: number;
    kubectlVersion: number;
  }
  const samples: Sample[] = [];
  try {
    await writeFile(rendered, (await gantry(['render', ...gantryArgs.filter((arg) => arg !== '-o' && arg !== 'json')])).stdout);
    for (let index = 0; index < runs; index++) {
      console.error(`bench: run ${index + 1} of ${runs}`);
      await clean();
      const gantryNoWait = await timed(() => gantry(['deploy', '--no-wait', '--no-render-cache', ...gantryArgs]));
      await clean();
      const gantryFresh = await timed(() => gantry(['deploy', '--no-render-cache', ...gantryArgs]));
      const gantryNoop = await timed(() => gantry(['deploy', ...gantryArgs]));
      const gantryNoopAgain = await timed(() => gantry(['deploy', ...gantryArgs]));
      const gantryFreshReused = await freshDeployReusingRender();
      await clean();
      const kubectlFresh = await timed(kubectlApply);
      const kubectlFreshWait = kubectlFresh + (await timed(kubectlWait));
      const kubectlNoop = await timed(kubectlApply);
      const kubectlNoopAgain = await timed(kubectlApply);
      const gantryHelp = await timed(() => gantry(['--help']));
      const gantryVersion = await timed(() => gantry(['--version']));
      const kubectlVersion = await timed(() => kubectl(['version', '--client']));
      samples.push({
        gantryNoWait,
        gantryFreshReused,
        gantryFresh,
        gantryNoop,
        gantryNoopAgain,
        kubectlFresh,
        kubectlFreshWait,
        kubectlNoop,
        kubectlNoopAgain,
        gantryHelp,
        gantryVersion,
        kubectlVersion,
      });
    }
  } finally {
    await clean().catch((error: Error) => console.error(`bench: cleanup failed: ${error.message}`));
    await rm(scratch, { recursive: true, force: true });
  }

  const median = (key: keyof Sample): number => {
    const sorted = samples.map((sample) => sample[key]).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] as number;
  };
  const rows: Array<[string, keyof Sample, keyof Sample]> = [
    ['fresh deploy, apply only', 'gantryNoWait', 'kubectlFresh'],
    ['fresh deploy, until ready', 'gantryFresh', 'kubectlFreshWait'],
    ['no-op redeploy', 'gantryNoop', 'kubectlNoop'],
    ['no-op redeploy, again', 'gantryNoopAgain', 'kubectlNoopAgain'],
    ['fresh deploy, render reused', 'gantryFreshReused', 'kubectlFresh'],
    ['startup: --help', 'gantryHelp', 'kubectlVersion'],
    ['startup: --version', 'gantryVersion', 'kubectlVersion'],
  ];
  const lines = [
    `\nmicroservices-demo/3-templating-and-multi-env, target test; median of ${runs} run(s), seconds\n`,
    `${'measurement'.padEnd(28)}${'gantry'.padStart(9)}${'kubectl'.padStart(9)}${'ratio'.padStart(8)}`,
  ];
  for (const [label, ours, theirs] of rows) {
    lines.push(
      `${label.padEnd(28)}${median(ours).toFixed(2).padStart(9)}${median(theirs).toFixed(2).padStart(9)}${(median(ours) / median(theirs)).toFixed(2).padStart(8)}`,
    );
  }
  return lines.join('\n');
}

/** The report table of the controller or the fleet half. */
function formatTable(result: ControllerBenchResult | FleetBenchResult): string {
  const figure = (value: number | undefined, unit: string) =>
    value === undefined
      ? '-'
      : `${value.toFixed(unit === 'MiB' || unit === '/s' ? 0 : unit === 'ms' ? 1 : unit === 'cores' ? 3 : 2)} ${unit}`;
  const ratio = (value: number, baseline: number | undefined) =>
    baseline === undefined ? '-' : (value / baseline).toFixed(value / baseline < 0.1 ? 3 : 2);
  const lines = [
    `\n${result.title}\n`,
    `${'measurement'.padEnd(44)}${'gantry'.padStart(13)}${'baseline'.padStart(13)}${'ratio'.padStart(8)}  baseline is`,
  ];
  for (const row of result.rows) {
    lines.push(
      `${row.measurement.padEnd(44)}${figure(row.value, row.unit).padStart(13)}${figure(row.baseline, row.unit).padStart(13)}${ratio(row.value, row.baseline).padStart(8)}  ${row.baselineIs ?? ''}`,
    );
  }
  if (result.notes.length > 0) lines.push('', ...result.notes.map((note) => `- ${note}`));
  return lines.join('\n');
}

/** The value of flag `name` as a positive integer. */
function positive(name: 'runs' | 'agents' | 'replica-agents' | 'window' | 'interval' | 'deployments' | 'cycles'): number {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, not '${values[name]}'`);
  return value;
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const begun = performance.now();
  await action();
  return (performance.now() - begun) / 1000;
}
