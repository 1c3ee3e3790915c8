/**
 * The KluctlDeployment controller started in this process through startKluctlController (as `gantry controller run`
 * starts it), against the local cluster and file:// git repositories: one client and one discovery for every
 * deployment of a context; a leader that loses its Lease in the middle of a deploy stops writing at once; a failed
 * finalizer removal is retried; and systemEnvVars sees none of the controller's environment.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_NAME, startKluctlController, type RunningKluctlController } from '../../src/controller/kluctl-deployment/controller.ts';
import { capturedLogger } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { serverEngineConfig } from '../../src/engine-config.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  configMapProject,
  installCrds,
  kluctlDeployment,
  reconcileNow,
  waitFor,
  waitNotReady,
  waitReady,
} from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';

const NS = `gantry-e2e-lifecycle-${randomBytes(3).toString('hex')}`;
const TIMING = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 };
const { log, lines } = capturedLogger('info');
const logText = async () => lines.map((line) => JSON.stringify(line)).join('\n');

let cacheDir: string;
let engine: Engine;
let controller: RunningKluctlController;
const repos: TestRepo[] = [];

async function repo(files: Record<string, string>): Promise<TestRepo> {
  const created = await createRepo(files);
  repos.push(created);
  return created;
}

async function configMapsLabelled(discriminator: string): Promise<Array<{ metadata: { name: string; creationTimestamp: string } }>> {
  return (
    await kubectlJson<{ items: Array<{ metadata: { name: string; creationTimestamp: string } }> }>([
      'get',
      'configmaps',
      '-n',
      NS,
      '-l',
      `kluctl.io/discriminator=${discriminator}`,
    ])
  ).items;
}

/** The value of the series `series` (name and labels, as exposed) in the exposition `metrics`; NaN when absent. */
function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
}

beforeAll(async () => {
  await installCrds();
  await kubectl(['create', 'namespace', NS]);
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-lifecycle-'));
  engine = new Engine(
    serverEngineConfig({
      cacheDir,
      allowSystemEnvHint: 'the controller shows templates only the variables named by --allow-system-env-var (none)',
      // Slow enough that the many-object deploy below is still applying when its leader loses the Lease.
      kubeApi: { qps: 20, burst: 5 },
      onTemplateStderr: () => undefined,
      gitRefreshMs: 0,
    }),
  );
  controller = await startKluctlController({
    kubeConfig: loadKubeConfig(),
    engine,
    namespace: NS,
    workers: 4,
    leaderElection: { namespace: NS, identity: 'in-process', ...TIMING },
    resultsNamespace: `${NS}-results`,
    keepResults: 2,
    cacheMaxAgeMs: 24 * 3600_000,
    logger: log,
  });
  await waitFor(
    async () => controller.handle.isLeader(),
    30_000,
    () => 'leadership',
  );
}, 120_000);

afterAll(async () => {
  await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(
    () => undefined,
  );
  await controller?.stop();
  await engine?.close();
  for (const created of repos) await created.remove();
  await rm(cacheDir, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', NS, `${NS}-results`, '--ignore-not-found', '--wait=false']);
});

describe('startKluctlController', { timeout: 300_000 }, () => {
  it('reconciles every deployment of a context through one client and one discovery', async () => {
    for (const name of ['one', 'two', 'three']) {
      const source = await repo(configMapProject(NS, `${NS}-${name}`, { [`${name}-config`]: name }));
      await applyObject(kluctlDeployment(NS, name, source.url));
    }
    for (const name of ['one', 'two', 'three']) await waitReady(NS, name, logText);
    for (const name of ['one', 'two', 'three']) await reconcileNow(NS, name, logText);
    expect(engine.clusters.size).toBe(1);
    expect(engine.clusters.discoveryLoads).toBe(1);
    const metrics = await controller.handle.metrics.registry.metrics();
    expect(metrics).toMatch(/^gantry_kube_clusters 1$/m);
    expect(metrics).toMatch(/^gantry_kube_discovery_loads_total 1$/m);
  });

  it('shows templates none of its own environment variables', async () => {
    const source = await repo({
      '.kluctl.yaml': 'targets:\n  - name: default\n',
      'deployment.yaml': 'vars:\n  - systemEnvVars:\n      home: HOME\ndeployments: []\n',
    });
    await applyObject(kluctlDeployment(NS, 'env', source.url));
    const failed = await waitNotReady(NS, 'env');
    expect(failed.status.lastPrepareError).toContain(
      'environment variable HOME not found for home (the controller shows templates only the variables named by --allow-system-env-var (none))',
    );
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'env', '-n', NS, '--wait=true']);
  });

  it('retries removing its finalizer until the API server lets it', async () => {
    const source = await repo(configMapProject(NS, `${NS}-kept`, { kept: 'x' }));
    await applyObject(kluctlDeployment(NS, 'kept', source.url, { delete: false }));
    await waitReady(NS, 'kept', logText);
    const policy = `${NS}-freeze`;
    await kubectl(
      ['apply', '-f', '-'],
      `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ${policy}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [gitops.gantry.dev], apiVersions: ['*'], operations: [UPDATE], resources: [kluctldeployments]}]
  validations: [{expression: 'false', message: frozen by the test}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ${policy}}
spec:
  policyName: ${policy}
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ${NS}}}
`,
    );
    try {
      await waitFor(
        () =>
          kubectl(['annotate', 'kluctldeployments.gitops.gantry.dev', 'kept', '-n', NS, 'e2e.gantry.dev/probe=1']).then(
            () => false,
            (error: Error) => error.message.includes('frozen by the test'),
          ),
        30_000,
        () => 'the admission policy in force',
      );
      await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'kept', '-n', NS, '--wait=false']);
      await waitFor(
        async () =>
          lines.some(
            (line) =>
              line.name === 'kept' &&
              String((line.err as { message?: string } | undefined)?.message).includes('removing the finalizer failed'),
          ),
        30_000,
        () => 'a failed finalizer removal',
      );
    } finally {
      await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', policy]);
    }
    // Nothing changes the object any more: only the retry can remove the finalizer.
    await waitFor(
      async () =>
        (
          await kubectlJson<{ items: unknown[] }>([
            'get',
            'kluctldeployments.gitops.gantry.dev',
            '-n',
            NS,
            '--field-selector',
            'metadata.name=kept',
          ])
        ).items.length === 0,
      60_000,
      () => 'the deployment gone',
    );
  });

  it('stops writing at once when it loses its Lease in the middle of a deploy, before another leader may start', async () => {
    const discriminator = `${NS}-many`;
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, index) => [`many-${String(index).padStart(3, '0')}`, `${index}`]));
    const source = await repo(configMapProject(NS, discriminator, many));
    await applyObject(kluctlDeployment(NS, 'many', source.url, { timeout: '10m' }));
    await waitFor(
      async () => (await configMapsLabelled(discriminator)).length >= 10,
      60_000,
      () => 'the deploy under way',
    );

    // Another candidate takes the Lease (conditional on the version read, so retried while the leader renews):
    // the leader's renewals fail from now on.
    const stolenAt = await waitFor(
      async () => {
        const lease = await kubectlJson<Record<string, any>>(['get', 'lease', LEASE_NAME, '-n', NS]);
        const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
        lease.spec = { ...lease.spec, holderIdentity: 'another-replica', leaseDurationSeconds: 60, acquireTime: now, renewTime: now };
        return kubectl(['replace', '-f', '-'], JSON.stringify(lease)).then(
          () => Date.now(),
          (error: Error) => (error.message.includes('the object has been modified') ? undefined : Promise.reject(error)),
        );
      },
      10_000,
      () => 'the Lease taken',
    );
    await waitFor(
      async () => !controller.handle.isLeader(),
      15_000,
      () => 'leadership lost',
    );
    const lostAt = Date.now();
    // It stops leading within its renew deadline, before the Lease it held could expire for anyone else.
    expect(lostAt - stolenAt).toBeLessThan(TIMING.leaseDurationMs + 1000);
    await waitFor(
      async () => lines.some((line) => line.name === 'many' && line.msg === 'reconcile aborted: the controller stops or lost leadership'),
      2000,
      () => 'the reconcile to return within 2 s of losing the Lease',
    );
    const written = (await configMapsLabelled(discriminator)).length;
    expect(written).toBeLessThan(150);
    // The behaviour under test is that nothing happens: no object is written by the replica that lost its Lease. The
    // aborted reconcile is queued again after the queue's backoff; a replica still reconciling would take it up then.
    // Wait until that retry is due and no worker took it (workqueue_depth counts the due keys not handed out; only
    // `many` has anything due in this namespace) while no reconcile runs.
    await waitFor(
      async () => {
        const metrics = await controller.handle.metrics.registry.metrics();
        return (
          sample(metrics, 'workqueue_depth{name="kluctldeployment"}') >= 1 &&
          sample(metrics, 'controller_runtime_active_workers{controller="kluctldeployment"}') === 0
        );
      },
      15_000,
      async () => `the retry of many due and not taken up:\n${await controller.handle.metrics.registry.metrics()}`,
    );
    expect(controller.handle.isLeader()).toBe(false);
    expect((await configMapsLabelled(discriminator)).length).toBe(written);

    // Given the Lease back, it leads again and finishes the deploy.
    await kubectl(['delete', 'lease', LEASE_NAME, '-n', NS]);
    await waitFor(
      async () => controller.handle.isLeader(),
      30_000,
      () => 'leadership again',
    );
    await waitFor(
      async () => (await configMapsLabelled(discriminator)).length === 150,
      120_000,
      () => 'the deploy finished',
    );
  });
});
