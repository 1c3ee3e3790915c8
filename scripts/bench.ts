/**
 * `npm run bench`: Gantry against `kubectl apply --server-side` on the local cluster, measured in the same run,
 * reported as ratios. Workload: microservices-demo/3-templating-and-multi-env, target `test`.
 *
 * - fresh deploy, apply only: `gantry deploy --no-wait` vs `kubectl apply --server-side -f <rendered>`
 * - fresh deploy with readiness: `gantry deploy` vs kubectl apply + `kubectl wait` for every Deployment and
 *   StatefulSet to be ready
 * - no-op redeploy: a second `gantry deploy` vs a second kubectl apply
 * Gantry's times include rendering (Jinja2, Helm, kustomize); kubectl gets the rendered file for free.
 * Each measurement is the median of `--runs` (default 3); the namespace is deleted before each fresh deploy.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { run } from '../src/exec.ts';
import { clusterUp } from './cluster/cluster.ts';
import { findExamples, REPO_ROOT } from './examples.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const runs = Number(values.runs);
const NAMESPACE = 'ms-demo-test';

const state = await clusterUp({ report: (line) => console.error(`cluster: ${line}`) });
const bin = path.join(REPO_ROOT, '.cluster/bin');
const env = { KUBECONFIG: state.kubeconfig, PATH: `${bin}:${process.env['PATH'] ?? ''}` };
const kubectl = (args: string[]) => run(path.join(bin, 'kubectl'), args, { env });
const context = (await kubectl(['config', 'current-context'])).stdout.trim();
const project = path.join(findExamples(), 'microservices-demo/3-templating-and-multi-env');
const gantryArgs = ['-t', 'test', '--project-dir', project, '--context', context, '-o', 'json'];
const gantry = (args: string[]) => run(path.join(REPO_ROOT, 'node_modules/.bin/node'), [path.join(REPO_ROOT, 'bin/gantry.js'), ...args], { env });

const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-bench-'));
const rendered = path.join(scratch, 'rendered.yaml');
await writeFile(rendered, (await gantry(['render', ...gantryArgs.filter((arg) => arg !== '-o' && arg !== 'json')])).stdout);

async function clean(): Promise<void> {
  await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=true', '--timeout=5m']);
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return (performance.now() - started) / 1000;
}

const kubectlApply = () => kubectl(['apply', '--server-side', '-f', rendered]);
const kubectlWait = () =>
  kubectl(['wait', '-n', NAMESPACE, '--for=jsonpath={.status.readyReplicas}', 'statefulsets', '--all', '--timeout=5m']).then(() =>
    kubectl(['wait', '-n', NAMESPACE, '--for=condition=Available', 'deployments', '--all', '--timeout=5m']),
  );

interface Sample {
  gantryNoWait: number;
  gantryFresh: number;
  gantryNoop: number;
  kubectlFresh: number;
  kubectlFreshWait: number;
  kubectlNoop: number;
}

const samples: Sample[] = [];
for (let index = 0; index < runs; index++) {
  console.error(`bench: run ${index + 1} of ${runs}`);
  await clean();
  const gantryNoWait = await timed(() => gantry(['deploy', '--no-wait', ...gantryArgs]));
  await clean();
  const gantryFresh = await timed(() => gantry(['deploy', ...gantryArgs]));
  const gantryNoop = await timed(() => gantry(['deploy', ...gantryArgs]));
  await clean();
  const kubectlFresh = await timed(kubectlApply);
  const kubectlFreshWait = kubectlFresh + (await timed(kubectlWait));
  const kubectlNoop = await timed(kubectlApply);
  samples.push({ gantryNoWait, gantryFresh, gantryNoop, kubectlFresh, kubectlFreshWait, kubectlNoop });
}
await clean();
await rm(scratch, { recursive: true, force: true });

const median = (key: keyof Sample): number => {
  const sorted = samples.map((sample) => sample[key]).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const rows: Array<[string, keyof Sample, keyof Sample]> = [
  ['fresh deploy, apply only', 'gantryNoWait', 'kubectlFresh'],
  ['fresh deploy, until ready', 'gantryFresh', 'kubectlFreshWait'],
  ['no-op redeploy', 'gantryNoop', 'kubectlNoop'],
];
console.log(`\nmicroservices-demo/3-templating-and-multi-env, target test; median of ${runs} run(s), seconds\n`);
console.log(`${'measurement'.padEnd(28)}${'gantry'.padStart(9)}${'kubectl'.padStart(9)}${'ratio'.padStart(8)}`);
for (const [label, ours, theirs] of rows) {
  console.log(`${label.padEnd(28)}${median(ours).toFixed(2).padStart(9)}${median(theirs).toFixed(2).padStart(9)}${(median(ours) / median(theirs)).toFixed(2).padStart(8)}`);
}
