/**
 * The controller under faults, each ending with the KluctlDeployment Ready again unaided and its status having said
 * what happened:
 * - killed with SIGKILL in the middle of a deploy (waiting for a claim's readiness): a new controller process takes
 *   over. Until the dead one's target lock expires its status says who holds the target; then it deploys, and exactly
 *   one deploy result exists for the commit (the killed deploy kept none, and none ran twice);
 * - its git server down while a push is announced: Ready False naming the repository that could not be fetched;
 *   once the server is back on its address, the next retry deploys the new commit, once;
 * - a deploy that times out waiting for a claim: Ready False naming the claim it waited for; once the claim is
 *   bound, the next retry deploys, and no deploy succeeded twice.
 * (The kube-apiserver restarted under the controller needs a cluster of its own: test/e2e/faults.test.ts.)
 */
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredResult } from '../../src/deploy/result-store.ts';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  configMapProject,
  configMapValue,
  getDeployment,
  installCrds,
  kluctlDeployment,
  readyOf,
  reconcileNow,
  startController,
  waitFor,
  waitReady,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, git, type TestRepo } from '../support/git-repo.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';
import { bindClaim, pendingClaim } from '../support/volumes.ts';

const NS = 'gantry-e2e-controller-faults';
const DISCRIMINATOR = 'gantry-e2e-controller-faults';
const STORAGE_CLASS = 'e2e-controller-faults';
const VOLUME = 'e2e-controller-faults-claim';

const configMap = (name: string, namespace = NS) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\ndata:\n  value: "${name}"\n`;

let repo: TestRepo;
const controllers: RunningController[] = [];
const controllerArgs = ['--namespace', NS, '--command-result-namespace', NS];
/** Namespaces of the tests beyond the first, each with a controller of its own watching only it. */
const GIT_NS = `${NS}-git`;
const TIMEOUT_NS = `${NS}-timeout`;
const TIMEOUT_VOLUME = `${VOLUME}-timeout`;
const repos: TestRepo[] = [];
const gitServers: GitServer[] = [];

/** The deploy results kept in `namespace`, oldest first. */
async function deployResults(namespace: string): Promise<StoredResult[]> {
  const secrets = await kubectlJson(['get', 'secrets', '-n', namespace, '-l', 'gantry.dev/result-command=deploy']);
  return secrets.items
    .map((secret) => JSON.parse(gunzipSync(Buffer.from(secret['data']['result.json.gz'], 'base64')).toString('utf8')) as StoredResult)
    .sort((a, b) => a.commandInfo.startTime.localeCompare(b.commandInfo.startTime));
}

async function freshNamespace(namespace: string): Promise<void> {
  await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=true']);
  await kubectl(['create', 'namespace', namespace]);
}

/** The controller's own, watching `namespace` alone and keeping results there. */
async function controllerFor(namespace: string): Promise<RunningController> {
  const controller = await startController(['--namespace', namespace, '--command-result-namespace', namespace]);
  controllers.push(controller);
  return controller;
}

beforeAll(async () => {
  await installCrds();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true']);
  await kubectl(['delete', 'pv', VOLUME, TIMEOUT_VOLUME, '--ignore-not-found']);
  await kubectl(['create', 'namespace', NS]);
  repo = await createRepo({
    '.kluctl.yaml': `discriminator: ${DISCRIMINATOR}\ntargets:\n  - name: default\n`,
    'deployment.yaml': 'deployments:\n  - path: first\n  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: second\n',
    'first/before.yaml': configMap('before'),
    // A class no provisioner serves: the claim stays Pending until the test binds it.
    'claim/claim.yaml': pendingClaim(NS, STORAGE_CLASS),
    'second/after.yaml': configMap('after'),
  });
}, 120_000);

afterAll(async () => {
  for (const namespace of [NS, GIT_NS, TIMEOUT_NS])
    await kubectl([
      'delete',
      'kluctldeployments.gitops.gantry.dev',
      '--all',
      '-n',
      namespace,
      '--ignore-not-found',
      '--wait=true',
      '--timeout=60s',
    ]).catch(() => undefined);
  for (const controller of controllers) await controller.stop();
  for (const server of gitServers) await server.close();
  await kubectl(['delete', 'namespace', NS, GIT_NS, TIMEOUT_NS, '--ignore-not-found', '--wait=false']);
  await kubectl(['delete', 'pv', VOLUME, TIMEOUT_VOLUME, '--ignore-not-found']);
  for (const each of [repo, ...repos]) await each.remove();
});

describe('a controller killed with SIGKILL in the middle of a deploy', { timeout: 240_000 }, () => {
  it('is replaced by one that deploys the commit once, its status saying meanwhile who holds the target', async () => {
    const first = await startController(controllerArgs);
    controllers.push(first);
    await applyObject(kluctlDeployment(NS, 'app', repo.url, { retryInterval: '5s' }));
    await waitFor(
      async () => (await kubectl(['get', 'pvc', '-n', NS, '-o', 'name'])).includes('claim'),
      60_000,
      () => first.log(),
    );
    process.kill(first.pid, 'SIGKILL');
    await waitFor(async () => !first.running(), 10_000);

    const second = await startController(controllerArgs);
    controllers.push(second);
    const locked = await waitFor(
      async () => {
        const message: string =
          readyOf(await kubectlJson<Record<string, any>>(['get', 'kluctldeployments.gitops.gantry.dev', 'app', '-n', NS]))?.message ?? '';
        return message.includes('is being changed by') ? message : undefined;
      },
      60_000,
      () => second.log(),
    );
    expect(locked).toContain(
      `the target with discriminator '${DISCRIMINATOR}' is being changed by the controller's KluctlDeployment ${NS}/app`,
    );

    await bindClaim(kubectl, { namespace: NS, storageClass: STORAGE_CLASS, volume: VOLUME });
    const ready = await waitReady(NS, 'app', second.log, 120_000);
    const commit = (await git(['rev-parse', 'main'], { cwd: repo.remote })).stdout.trim();
    expect(ready.status.lastDeployResult.revision).toBe(commit);
    expect(ready.status.lastDeployResult.errors).toEqual([]);
    const names = (await kubectl(['get', 'configmaps', '-n', NS, '-o', 'name'])).split('\n');
    expect(names).toEqual(expect.arrayContaining(['configmap/before', 'configmap/after']));
    const results = await kubectlJson(['get', 'secrets', '-n', NS, '-l', 'gantry.dev/result-command=deploy']);
    expect(results.items).toHaveLength(1);
  });
});

describe('the git server down for a while', { timeout: 240_000 }, () => {
  it('makes the status name the repository that cannot be fetched; once it is back, the new commit is deployed once, unaided', async () => {
    await freshNamespace(GIT_NS);
    const discriminator = `${DISCRIMINATOR}-git`;
    const source = await createRepo(configMapProject(GIT_NS, discriminator, { app: 'v1' }));
    repos.push(source);
    const root = path.dirname(source.remote);
    const down = await startGitServer(root);
    const url = down.url('remote.git');
    const controller = await controllerFor(GIT_NS);
    await applyObject(kluctlDeployment(GIT_NS, 'app', url, { retryInterval: '3s' }));
    const first = await waitReady(GIT_NS, 'app', controller.log);
    expect(first.status.lastDeployResult.revision).toBe((await git(['rev-parse', 'main'], { cwd: source.remote })).stdout.trim());

    await down.close();
    const pushed = await source.commit(configMapProject(GIT_NS, discriminator, { app: 'v2' }), 'v2');
    // The push is announced (as a webhook would): the reconcile it asks for meets the server down.
    const failed = await reconcileNow(GIT_NS, 'app', controller.log);
    expect(failed.status.reconcileRequestResult.commandError).toContain(`git repository ${url} could not be fetched`);
    expect(readyOf(failed)).toMatchObject({ status: 'False', reason: 'PrepareFailed' });
    expect(readyOf(failed)?.message).toContain(`git repository ${url} could not be fetched`);
    expect(await configMapValue(GIT_NS, 'app')).toBe('v1');

    gitServers.push(await startGitServer(root, undefined, down.port));
    const ready = await waitFor(
      async () => {
        const deployment = await getDeployment(GIT_NS, 'app');
        return readyOf(deployment)?.status === 'True' && deployment.status.lastDeployResult?.revision === pushed ? deployment : undefined;
      },
      90_000,
      async () => `${GIT_NS}/app Ready at ${pushed}: ${JSON.stringify(readyOf(await getDeployment(GIT_NS, 'app')))}`,
    );
    expect(ready.status.lastDeployResult.errors).toEqual([]);
    expect(await configMapValue(GIT_NS, 'app')).toBe('v2');
    // One deploy of each commit: the failed fetches deployed nothing.
    const results = await deployResults(GIT_NS);
    expect(results.map((result) => result.result.errors)).toEqual([[], []]);
  });
});

describe('a deploy that times out', { timeout: 240_000 }, () => {
  it('makes the status name the object it waited for; once that is ready, the next retry deploys, unaided', async () => {
    await freshNamespace(TIMEOUT_NS);
    const source = await createRepo({
      '.kluctl.yaml': `discriminator: ${DISCRIMINATOR}-timeout\ntargets:\n  - name: default\n`,
      'deployment.yaml': 'deployments:\n  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: after\n',
      'claim/claim.yaml': pendingClaim(TIMEOUT_NS, STORAGE_CLASS),
      'after/after.yaml': configMap('after', TIMEOUT_NS),
    });
    repos.push(source);
    const controller = await controllerFor(TIMEOUT_NS);
    // 30 s is the shortest timeout the controller takes (as Kluctl's): a shorter one counts as 30 s.
    await applyObject(kluctlDeployment(TIMEOUT_NS, 'app', source.url, { timeout: '30s', retryInterval: '3s' }));
    const timedOut = await waitFor(
      async () => {
        const ready = readyOf(await getDeployment(TIMEOUT_NS, 'app'));
        return ready?.status === 'False' ? ready : undefined;
      },
      90_000,
      controller.log,
    );
    expect(timedOut.reason).toBe('DeployFailed');
    expect(timedOut.message).toContain(`${TIMEOUT_NS}/PersistentVolumeClaim/claim: not ready before the timeout`);

    await bindClaim(kubectl, { namespace: TIMEOUT_NS, storageClass: STORAGE_CLASS, volume: TIMEOUT_VOLUME });
    const ready = await waitReady(TIMEOUT_NS, 'app', controller.log, 120_000);
    expect(ready.status.lastDeployResult.errors).toEqual([]);
    expect(await configMapValue(TIMEOUT_NS, 'after')).toBe('after');
    // Every deploy before the successful one timed out; none succeeded twice.
    const results = await deployResults(TIMEOUT_NS);
    expect(results.at(-1)?.result.errors).toEqual([]);
    for (const result of results.slice(0, -1)) expect(result.result.errors.length).toBeGreaterThan(0);
  });
});
