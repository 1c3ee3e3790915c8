/**
 * `npm run demo:single`: the single-cluster path: brings the local cluster up and deploys Kluctl's microservices demo
 * (3-templating-and-multi-env, target `test`) into it with Gantry, then shows the result and how to look around.
 * The setup (tools, Python, npm packages) ran before, from the `predemo:single` hook.
 */
import path from 'node:path';
import { main } from '../src/cli/main.ts';
import { run } from '../src/exec.ts';
import { clusterUp } from './cluster/cluster.ts';
import { findExamples, REPO_ROOT } from './examples.ts';

const state = await clusterUp({ report: (line) => console.error(`cluster: ${line}`) });
const bin = path.join(REPO_ROOT, '.cluster/bin');
process.env['KUBECONFIG'] = state.kubeconfig;
process.env['PATH'] = `${bin}:${process.env['PATH'] ?? ''}`;

const kubectl = path.join(bin, 'kubectl');
const context = (await run(kubectl, ['config', 'current-context'])).stdout.trim();
const project = path.join(findExamples(), 'microservices-demo/3-templating-and-multi-env');

console.error(`\nDeploying ${project} (target test) to context ${context}\n`);
const code = await main(['node', 'gantry', 'deploy', '-t', 'test', '--project-dir', project, '--context', context, '-y']);

console.log('\nDeployments in namespace ms-demo-test:\n');
console.log((await run(kubectl, ['get', 'deployments,statefulsets', '-n', 'ms-demo-test'])).stdout);
console.log(`Look around:
  export KUBECONFIG=${state.kubeconfig} PATH=${bin}:$PATH
  kubectl get all -n ms-demo-test
  bin/gantry.js diff   -t test --project-dir ${project} --context ${context}
  bin/gantry.js deploy -t local --project-dir ${project} --context ${context}
  npm run cluster -- status     # or: down`);
process.exitCode = code;
