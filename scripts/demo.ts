/**
 * `npm run demo`: the fleet on this machine. Starts three local clusters (`local` as the management cluster, and
 * the workload clusters `dev` and `prod`), a `gantry server` on its embedded database, an agent per workload
 * cluster, and a local git repository holding a copy of Kluctl's examples; then creates, through the API, a
 * Kluctl-project service of the microservices demo on each workload cluster (target `test` on dev, `prod` on
 * prod) and a global service of a small raw-YAML service for every cluster tagged `tier: web`, waits until the
 * agents report them all healthy, sets a release pipeline dev → prod behind an approval gate, starts the
 * KluctlDeployment controller on dev with Kluctl's `simple` example, and prints the clusters,
 * services, the web UI's address and login, and how to look further. Idempotent: a second run reuses what runs. `npm run demo:single` is the single-cluster demo.
 */
import { cp, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApiError, type ApiService, FleetClient } from '../src/client/fleet-client.ts';
import { run } from '../src/exec.ts';
import { sleep } from '../src/sleep.ts';
import { clusterUp } from './cluster/cluster.ts';
import { clusterLayout } from './cluster/layout.ts';
import { findExamples, REPO_ROOT } from './examples.ts';
import { agentUp, controllerUp, fleetLayout, readAdminPassword, serverUp } from './fleet/fleet.ts';

const WORKLOAD = [
  { cluster: 'dev', target: 'test', tags: { tier: 'web', env: 'dev' } },
  { cluster: 'prod', target: 'prod', tags: { tier: 'web', env: 'prod' } },
] as const;
const PROJECT = 'microservices-demo/3-templating-and-multi-env';
/** A small raw-YAML service the demo adds to its copy of the examples, for the global service. */
const HELLO = 'gantry-demo/hello';
const HELLO_FILES: Record<string, string> = {
  'deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec: {containers: [{name: hello, image: registry.invalid/hello:1, ports: [{containerPort: 8080}]}]}
`,
  'service.yaml': `apiVersion: v1
kind: Service
metadata:
  name: hello
spec:
  selector: {app: hello}
  ports: [{port: 80, targetPort: 8080}]
`,
};
const TIMEOUT_MS = 10 * 60_000;
const PIPELINE = 'ms-demo-release';

const report = (line: string) => console.error(`demo: ${line}`);
const bin = path.join(REPO_ROOT, '.cluster/bin');
process.env['PATH'] = `${bin}:${process.env['PATH'] ?? ''}`;

for (const name of ['local', ...WORKLOAD.map((w) => w.cluster)]) {
  await clusterUp({ layout: clusterLayout(name), report: (line) => report(`cluster ${name}: ${line}`) });
}
const repository = await examplesRepository();
const { state, adminToken } = await serverUp(report);
const client = new FleetClient({ server: state.server, token: adminToken });

for (const { cluster, tags } of WORKLOAD) {
  await ensureCluster(cluster, tags);
  await agentUp(cluster, state.server, report);
}
await client.createRepository({ url: repository }).catch(ignoreConflict);
for (const { cluster, target } of WORKLOAD) {
  await client
    .createService(cluster, {
      name: 'ms-demo',
      namespace: `ms-demo-${target}`,
      repository,
      git: { ref: 'main', folder: PROJECT },
      renderer: { kind: 'kluctl', target },
    })
    .catch(ignoreConflict);
}
await client
  .createGlobalService({
    name: 'hello',
    tags: { tier: 'web' },
    template: { name: 'hello', namespace: 'hello', repository, git: { ref: 'main', folder: HELLO }, renderer: { kind: 'raw' } },
  })
  .catch(ignoreConflict);
const services = await waitHealthy();
await controllerUp('dev', report);
await kubectlOn('dev', ['apply', '--server-side', '--field-manager=gantry-demo', '-f', '-'], JSON.stringify(simpleDeployment(repository)));
// A release pipeline over the two ms-demo services: dev's context waits at an approval gate before prod gets dev's
// commit. PUT is idempotent, and a gate already decided stays decided.
await client.setPipeline(PIPELINE, {
  stages: [
    { name: 'dev', services: [{ cluster: 'dev', name: 'ms-demo' }] },
    { name: 'prod', services: [{ cluster: 'prod', name: 'ms-demo', criteria: { cluster: 'dev', name: 'ms-demo' } }] },
  ],
  edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'approval', type: 'APPROVAL' }] }],
});

console.log('\nClusters:\n');
console.log((await run(process.execPath, [path.join(REPO_ROOT, 'bin/gantry.js'), 'cluster', 'list'], { env: login() })).stdout);
console.log('Services:\n');
console.log((await run(process.execPath, [path.join(REPO_ROOT, 'bin/gantry.js'), 'service', 'list'], { env: login() })).stdout);
console.log(`${services.length} services healthy, deployed by the agents of ${WORKLOAD.map((w) => w.cluster).join(' and ')}.

Open the web UI at ${state.server}/ and log in as admin with password ${await readAdminPassword()}
(kept in ${fleetLayout().adminPassword}). The pipeline ${PIPELINE} waits there for your approval to promote dev to prod,
and the KluctlDeployment default/simple on dev, reconciled by a \`gantry controller run\`, shows its results.

Look around (the API is ${state.server}, its OpenAPI document at ${state.server}/v1/openapi.json):
  export GANTRY_SERVER=${state.server} GANTRY_TOKEN=$(cat ${fleetLayout().adminToken})
  bin/gantry.js service get ms-demo --cluster dev     # components and their health
  bin/gantry.js service revisions ms-demo --cluster prod
  bin/gantry.js globalservice get hello               # on every cluster tagged tier=web
  bin/gantry.js pipeline get ${PIPELINE}            # the DAG and its gate; gantry pipeline approve ${PIPELINE} approval
  export KUBECONFIG=${clusterLayout('dev').kubeconfig} PATH=${bin}:$PATH
  kubectl get deployments -n ms-demo-test
  npm run cluster -- status                           # the three clusters; logs of server and agents: ${fleetLayout().logs}
  npm run fleet -- down && npm run cluster -- down --all   # stop everything`);

/** Kluctl's `simple` example as a KluctlDeployment of the demo's repository, for the controller on dev. */
function simpleDeployment(url: string): object {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'simple', namespace: 'default' },
    spec: { interval: '5m', source: { git: { url, path: 'simple' } }, target: 'simple', context: 'default', prune: true },
  };
}

function kubectlOn(cluster: string, args: string[], input: string) {
  return run(path.join(bin, 'kubectl'), args, { env: { KUBECONFIG: clusterLayout(cluster).kubeconfig }, input });
}

function login(): Record<string, string> {
  return { GANTRY_SERVER: state.server, GANTRY_TOKEN: adminToken };
}

/** Registers the cluster (or keeps it) and makes sure its agent has a deploy token on disk. */
async function ensureCluster(name: string, tags: Record<string, string>): Promise<void> {
  const tokenFile = fleetLayout().agentToken(name);
  const exists = await client.getCluster(name).then(
    () => true,
    () => false,
  );
  const token = exists
    ? (await stat(tokenFile).catch(() => undefined))
      ? undefined
      : (await client.rotateDeployToken(name, true)).deployToken
    : (await client.createCluster({ name, tags })).deployToken;
  if (token) {
    await run('mkdir', ['-p', path.dirname(tokenFile)]);
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
  }
}

/** A bare git repository (file://) with a copy of the Kluctl examples, made once. */
async function examplesRepository(): Promise<string> {
  const bare = path.join(fleetLayout().root, 'git', 'kluctl-examples.git');
  if (!(await stat(bare).catch(() => undefined))) {
    report('making a git repository of the Kluctl examples');
    const work = await mkdtemp(path.join(tmpdir(), 'gantry-demo-examples-'));
    try {
      await cp(findExamples(), work, { recursive: true });
      await run('chmod', ['-R', 'u+w', work]);
      await mkdir(path.join(work, HELLO), { recursive: true });
      for (const [name, text] of Object.entries(HELLO_FILES)) await writeFile(path.join(work, HELLO, name), text);
      const git = (args: string[], cwd = work) =>
        run('git', ['-c', 'user.name=Gantry Demo', '-c', 'user.email=demo@gantry.dev', ...args], {
          cwd,
          env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
        });
      await git(['init', '--quiet', '--initial-branch=main']);
      await git(['add', '--all']);
      await git(['commit', '--quiet', '-m', 'Kluctl examples']);
      await git(['clone', '--quiet', '--bare', work, bare], REPO_ROOT);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  return `file://${bare}`;
}

/** Waits until every service is healthy at its newest revision, reporting progress; fails saying why not. */
async function waitHealthy(): Promise<ApiService[]> {
  const deadline = Date.now() + TIMEOUT_MS;
  let last = '';
  for (;;) {
    const services = await client.listServices();
    const summary = services
      .map((s) => `${s.cluster}/${s.name} ${s.status} (${s.components.filter((c) => c.state === 'RUNNING').length}/${s.components.length})`)
      .join(', ');
    if (summary !== last) report(`services: ${summary}`);
    last = summary;
    if (services.length === 2 * WORKLOAD.length && services.every((s) => s.status === 'healthy' && s.appliedRevision === s.revision.number))
      return services;
    if (Date.now() > deadline) {
      const errors = services.flatMap((s) => s.errors.map((e) => `${s.cluster}/${s.name}: ${e.message}`));
      throw new Error(
        `services not healthy after ${TIMEOUT_MS / 60_000} minutes: ${summary}${errors.length ? `\n${errors.join('\n')}` : ''}`,
      );
    }
    await sleep(2_000);
  }
}

function ignoreConflict(error: unknown): void {
  if (!(error instanceof ApiError && error.status === 409)) throw error;
}
