/**
 * The GitOps controller end to end: the real `gantry controller run` process reconciling KluctlDeployments from real
 * git repositories (served over HTTP by git's own backend, and file://) into the local cluster.
 */
import { createHmac } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  configMapProject as sharedConfigMapProject,
  configMapValue,
  getDeployment,
  installCrds,
  kluctlDeployment as sharedKluctlDeployment,
  readyOf,
  reconcileNow as sharedReconcileNow,
  startController,
  waitFor,
  waitReady as sharedWaitReady,
  WEBHOOK_SECRET,
  waitReconciledSince,
  type RunningController,
} from '../support/controller.ts';
import { example } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';

const NAMESPACE = 'gantry-e2e-controller';

let controller: RunningController;
const cleanups: Array<() => Promise<unknown>> = [];

const kluctlDeployment = (name: string, url: string, spec: Record<string, unknown> = {}) =>
  sharedKluctlDeployment(NAMESPACE, name, url, spec);
const configMapProject = (namespace: string, configMaps: Record<string, string>) =>
  sharedConfigMapProject(namespace, `e2e-controller-${namespace}`, configMaps);
const waitReady = (name: string, timeoutMs?: number) => sharedWaitReady(NAMESPACE, name, () => controller.log(), timeoutMs);
const reconcileNow = (name: string) => sharedReconcileNow(NAMESPACE, name, () => controller.log());

async function createNamespace(name: string): Promise<void> {
  await kubectl(['create', 'namespace', name, '--dry-run=client', '-o', 'yaml']).then((yaml) => kubectl(['apply', '-f', '-'], yaml));
}

/** Posts a GitHub push event for `url`, signed with the controller's webhook secret. */
async function announcePush(url: string): Promise<Response> {
  const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: url, html_url: url } });
  const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
  return fetch(controller.webhookUrl, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
  });
}

async function deleteDeployment(name: string): Promise<void> {
  await kubectl([
    'delete',
    'kluctldeployments.gitops.gantry.dev',
    name,
    '-n',
    NAMESPACE,
    '--ignore-not-found',
    '--wait=true',
    '--timeout=120s',
  ]);
}

describe('gantry controller run', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await installCrds();
    await createNamespace(NAMESPACE);
    // Only this file's namespace: other files (and concurrent runs) have controllers of their own.
    controller = await startController(['--namespace', NAMESPACE]);
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await controller?.stop();
  });

  describe('the microservices example from a git server', () => {
    let repo: TestRepo;
    let server: GitServer;
    let url: string;
    let initial: string;

    beforeAll(async () => {
      // The first deploy must find nothing: an earlier run's deletion may still be in progress (deleting a
      // KluctlDeployment does not wait for it), and a bench or CLI deploy of the same example may have left it whole.
      await kubectl(['delete', 'namespace', 'ms-demo-test', 'ms-demo-prod', '--ignore-not-found', '--wait=true', '--timeout=180s']);
      const project = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-ms-'));
      await cp(example('microservices-demo/3-templating-and-multi-env'), project, { recursive: true });
      repo = await createRepo({});
      initial = await repo.commit(await filesOf(project), 'the example');
      await rm(project, { recursive: true, force: true });
      server = await startGitServer(path.dirname(repo.remote));
      url = server.url('remote.git');
      cleanups.push(
        () => repo.remove(),
        () => server.close(),
        () => deleteDeployment('ms-test'),
        () => deleteDeployment('ms-prod'),
      );
    });

    it('deploys targets test and prod and reports Ready with the commit', async () => {
      for (const target of ['test', 'prod']) await applyObject(kluctlDeployment(`ms-${target}`, url, { target }));
      for (const target of ['test', 'prod']) {
        const deployment = await waitReady(`ms-${target}`, 240_000);
        expect(deployment.metadata.finalizers).toContain('finalizers.gitops.gantry.dev');
        expect(deployment.status.lastObjectsHash).toMatch(/^[0-9a-f]{64}$/);
        expect(deployment.status.lastDeployResult.errors).toEqual([]);
        expect(deployment.status.lastDeployResult.revision).toBe(initial);
        expect(deployment.status.observedCommit).toBe(initial);
        expect(deployment.status.lastValidateResult.errors).toEqual([]);
        expect(deployment.status.lastDriftDetectionResultMessage).toBe('no drift');
        const names = (await kubectlJson(['get', 'deployments', '-n', `ms-demo-${target}`])).items.map((item) => item.metadata.name);
        expect(names).toContain('frontend');
        expect(names).toContain('emailservice');
      }
    });

    it('records Events and a kept command result for the deploy', async () => {
      // The controller posts its Events beside the status, not before it: wait for them.
      const events = await waitFor(
        async () => {
          const found = (await kubectlJson(['get', 'events', '-n', NAMESPACE, '--field-selector', 'involvedObject.name=ms-test'])).items;
          return found.some((event) => event.reason === 'Deployed') ? found : undefined;
        },
        30_000,
        async () => `a Deployed Event of ms-test\n${(await controller.log()).slice(-3000)}`,
      );
      expect(events.map((event) => event.reason)).toContain('Deployed');
      const deployment = await getDeployment(NAMESPACE, 'ms-test');
      const keptResult = (names: string[]) => names.some((name) => name.includes(deployment.status.lastDeployResult.id));
      const results = await waitFor(
        async () => {
          const names = (await kubectlJson(['get', 'secrets', '-n', 'gantry-results'])).items.map((item) => item.metadata.name as string);
          return keptResult(names) ? names : undefined;
        },
        30_000,
        () => `a Secret in gantry-results for the result ${deployment.status.lastDeployResult.id}`,
      );
      expect(keptResult(results)).toBe(true);
    });

    it('deploys nothing for an unchanged commit', async () => {
      const before = await getDeployment(NAMESPACE, 'ms-test');
      const frontend = await kubectlJson<Record<string, any>>(['get', 'deployment', 'frontend', '-n', 'ms-demo-test']);
      const reuses = async () =>
        (await controller.log()).split('\n').filter((line) => line.includes('"name":"ms-test"') && line.includes('reusing the render'))
          .length;
      const reusesBefore = await reuses();
      const after = await reconcileNow('ms-test');
      // Same revision, spec and cluster: the render is the one kept in the controller's memory.
      expect(await reuses()).toBeGreaterThan(reusesBefore);
      expect(after.status.lastDeployResult.id).toBe(before.status.lastDeployResult.id);
      expect(after.status.lastObjectsHash).toBe(before.status.lastObjectsHash);
      const frontendAfter = await kubectlJson<Record<string, any>>(['get', 'deployment', 'frontend', '-n', 'ms-demo-test']);
      expect(frontendAfter.metadata.resourceVersion).toBe(frontend.metadata.resourceVersion);
    });

    it('deploys a pushed commit at once when a webhook announces it', async () => {
      const commit = await repo.commit({ 'vars/real.yml': realVarsWithoutLoadgenerator() }, 'disable the loadgenerator');
      const response = await announcePush(url);
      expect(response.status).toBe(202);
      const deployment = await waitFor(
        async () => {
          const current = await getDeployment(NAMESPACE, 'ms-test');
          return current.status?.lastDeployResult?.revision === commit ? current : undefined;
        },
        60_000,
        async () => `ms-test deploying ${commit}\n${(await controller.log()).slice(-3000)}`,
      );
      expect(deployment.status.lastDeployResult.deletedObjects).toBeGreaterThan(0);
      const names = (await kubectlJson(['get', 'deployments', '-n', 'ms-demo-test'])).items.map((item) => item.metadata.name);
      expect(names).not.toContain('loadgenerator');
      expect(names).toContain('frontend');
    });

    it('refuses webhooks with a wrong signature', async () => {
      const body = JSON.stringify({ repository: { clone_url: url } });
      const response = await fetch(controller.webhookUrl, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=00' },
      });
      expect(response.status).toBe(401);
    });

    it('reports drift of a deployed object without overwriting it', async () => {
      await kubectl(['set', 'env', 'deployment/frontend', '-n', 'ms-demo-prod', 'PORT=9999']);
      const deployment = await reconcileNow('ms-prod');
      const drifted = deployment.status.lastDriftDetectionResult.objects.map(
        (ref: { kind: string; name: string }) => `${ref.kind}/${ref.name}`,
      );
      expect(drifted).toContain('Deployment/frontend');
      expect(deployment.status.lastDriftDetectionResultMessage).toBe('1 object(s) drifted');
      const frontend = await kubectlJson<Record<string, any>>(['get', 'deployment', 'frontend', '-n', 'ms-demo-prod']);
      const env = frontend.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>;
      expect(env.find((variable) => variable.name === 'PORT')?.value).toBe('9999');
    });

    it('exports reconcile, deploy and drift metrics', async () => {
      const expected = [
        /kluctldeployments_deploys_total\{namespace="gantry-e2e-controller",name="ms-test",result="success"\} [1-9]/,
        /kluctldeployments_drifted_objects\{namespace="gantry-e2e-controller",name="ms-prod"\} 1/,
        /gotk_reconcile_duration_seconds_count\{kind="KluctlDeployment",name="ms-test",namespace="gantry-e2e-controller"\} [1-9]/,
      ];
      // The reconcile duration is observed once the reconcile has returned, after its status was written.
      let metrics = '';
      await waitFor(
        async () => {
          metrics = await (await fetch(controller.metricsUrl)).text();
          return expected.every((pattern) => pattern.test(metrics));
        },
        30_000,
        () => `metrics matching ${expected.join(', ')}:\n${metrics}`,
      );
      for (const pattern of expected) expect(metrics).toMatch(pattern);
    });

    it('deletes exactly its own objects when deleted with delete: true', async () => {
      await kubectl(['create', 'configmap', 'not-owned', '-n', 'ms-demo-test', '--from-literal=a=b']);
      await deleteDeployment('ms-test');
      // The finalizer deletes without waiting for the objects to go; not-owned goes with its namespace, whose
      // contents the namespace controller removes after that.
      const labelledObjects = async () =>
        (
          await kubectlJson([
            'get',
            'deployments,services,configmaps',
            '-A',
            '-l',
            'kluctl.io/discriminator=kluctl-examples-microservices-demo-test',
          ])
        ).items;
      await waitFor(
        async () => (await labelledObjects()).length === 0 && (await configMapValue('ms-demo-test', 'not-owned')) === undefined,
        120_000,
        async () =>
          `ms-test's objects and ms-demo-test/not-owned gone: ${JSON.stringify((await labelledObjects()).map((item) => `${item.kind}/${item.metadata.name}`))}`,
      );
      expect(await labelledObjects()).toEqual([]);
      expect(await configMapValue('ms-demo-test', 'not-owned')).toBeUndefined();
      const prod = (await kubectlJson(['get', 'deployments', '-n', 'ms-demo-prod'])).items;
      expect(prod.length).toBeGreaterThan(5);
    });
  });

  describe('small projects from file:// repositories', () => {
    it('sees a pushed commit by polling within the interval', async () => {
      const namespace = 'gantry-e2e-ctl-poll';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { settings: 'one' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('poll'),
      );
      await applyObject(kluctlDeployment('poll', repo.url, { interval: '2s' }));
      await waitReady('poll');
      expect(await configMapValue(namespace, 'settings')).toBe('one');
      await repo.commit(configMapProject(namespace, { settings: 'two' }));
      await waitFor(
        async () => (await configMapValue(namespace, 'settings')) === 'two',
        30_000,
        () => 'settings = two',
      );
    });

    it('prunes an object removed from git', async () => {
      const namespace = 'gantry-e2e-ctl-prune';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { keep: 'k', drop: 'd' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('prune'),
      );
      await applyObject(kluctlDeployment('prune', repo.url));
      await waitReady('prune');
      expect(await configMapValue(namespace, 'drop')).toBe('d');
      await repo.commit({ 'app/drop.yaml': null });
      await reconcileNow('prune');
      expect(await configMapValue(namespace, 'drop')).toBeUndefined();
      expect(await configMapValue(namespace, 'keep')).toBe('k');
    });

    it('deploys with manual: true only the objects hash that was approved', async () => {
      const namespace = 'gantry-e2e-ctl-manual';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { approved: 'v1' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('manual'),
      );
      await applyObject(kluctlDeployment('manual', repo.url, { manual: true }));
      const waiting = await waitFor(async () => {
        const deployment = await getDeployment(NAMESPACE, 'manual');
        // The hash is written while the reconcile runs; Ready when it ends.
        return deployment.status?.lastObjectsHash && readyOf(deployment) ? deployment : undefined;
      }, 60_000);
      expect(readyOf(waiting)?.message).toContain('waiting for approval');
      expect(await configMapValue(namespace, 'approved')).toBeUndefined();

      await applyObject(kluctlDeployment('manual', repo.url, { manual: true, manualObjectsHash: waiting.status.lastObjectsHash }));
      await waitReady('manual');
      expect(await configMapValue(namespace, 'approved')).toBe('v1');

      await repo.commit(configMapProject(namespace, { approved: 'v2' }));
      const pending = await reconcileNow('manual');
      expect(pending.status.lastObjectsHash).not.toBe(waiting.status.lastObjectsHash);
      expect(await configMapValue(namespace, 'approved')).toBe('v1');
    });

    it('does nothing while suspended and catches up when resumed', async () => {
      const namespace = 'gantry-e2e-ctl-suspend';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { state: 'before' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('suspend'),
      );
      await applyObject(kluctlDeployment('suspend', repo.url, { interval: '2s' }));
      await waitReady('suspend');
      await applyObject(kluctlDeployment('suspend', repo.url, { interval: '2s', suspend: true }));
      await waitReady('suspend');
      await repo.commit(configMapProject(namespace, { state: 'after' }));
      // Announced, the commit is fetched afresh by the next reconcile, whatever the git refresh interval: one that was
      // not suspended would deploy it at once (as 'deploys a pushed commit at once when a webhook announces it' shows).
      expect((await announcePush(repo.url)).status).toBe(202);
      // A whole reconcile of the deployment ran after the push was handled, and left the old state in place.
      await waitReconciledSince(controller.metricsUrl, NAMESPACE, 'suspend', () => controller.log());
      expect(await configMapValue(namespace, 'state')).toBe('before');
      await applyObject(kluctlDeployment('suspend', repo.url, { interval: '2s', suspend: false }));
      await waitFor(
        async () => (await configMapValue(namespace, 'state')) === 'after',
        30_000,
        () => 'state = after',
      );
    });

    it('keeps its objects when deleted with delete: false', async () => {
      const namespace = 'gantry-e2e-ctl-orphan';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { stays: 'yes' }));
      cleanups.push(
        () => repo.remove(),
        () => kubectl(['delete', 'namespace', namespace, '--wait=false']),
      );
      await applyObject(kluctlDeployment('orphan', repo.url, { delete: false }));
      await waitReady('orphan');
      await deleteDeployment('orphan');
      expect(await configMapValue(namespace, 'stays')).toBe('yes');
    });

    it('reports a broken source on its own deployment and keeps reconciling the others', async () => {
      const namespace = 'gantry-e2e-ctl-isolated';
      await createNamespace(namespace);
      const repo = await createRepo(configMapProject(namespace, { healthy: 'yes' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('broken'),
        () => deleteDeployment('healthy'),
      );
      await applyObject(kluctlDeployment('broken', 'http://127.0.0.1:9/no-such-repo.git', { retryInterval: '1s' }));
      await applyObject(kluctlDeployment('healthy', repo.url));
      await waitReady('healthy');
      const broken = await waitFor(async () => {
        const deployment = await getDeployment(NAMESPACE, 'broken');
        return readyOf(deployment)?.status === 'False' ? deployment : undefined;
      }, 60_000);
      expect(readyOf(broken)?.reason).toBe('PrepareFailed');
      expect(readyOf(broken)?.message).toContain('http://127.0.0.1:9/no-such-repo.git');
      expect(await configMapValue(namespace, 'healthy')).toBe('yes');
    });

    it('retries a failed deploy of unchanged objects until it succeeds', async () => {
      const namespace = 'gantry-e2e-ctl-retry';
      await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=true']);
      const repo = await createRepo(configMapProject(namespace, { later: 'ok' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('retry'),
      );
      // The namespace does not exist yet: the apply fails, and nothing in git or the spec will change.
      await applyObject(kluctlDeployment('retry', repo.url));
      const failed = await waitFor(async () => {
        const deployment = await getDeployment(NAMESPACE, 'retry');
        return readyOf(deployment)?.reason === 'DeployFailed' ? deployment : undefined;
      }, 60_000);
      expect(readyOf(failed)?.message).toContain(`namespaces "${namespace}" not found`);
      await createNamespace(namespace);
      // Retried with backoff (1 s, 2 s, 4 s, …), well before the 10m interval.
      await waitFor(
        async () => readyOf(await getDeployment(NAMESPACE, 'retry'))?.status === 'True',
        60_000,
        () => 'retry Ready after the namespace appeared',
      );
      expect(await configMapValue(namespace, 'later')).toBe('ok');
    });

    it('names a target the project does not have', async () => {
      const repo = await createRepo(configMapProject('default', { unused: 'x' }));
      cleanups.push(
        () => repo.remove(),
        () => deleteDeployment('no-target'),
      );
      await applyObject(kluctlDeployment('no-target', repo.url, { target: 'nope' }));
      const failed = await waitFor(async () => {
        const deployment = await getDeployment(NAMESPACE, 'no-target');
        return readyOf(deployment)?.status === 'False' ? deployment : undefined;
      }, 60_000);
      expect(readyOf(failed)?.reason).toBe('PrepareFailed');
      expect(readyOf(failed)?.message).toContain('nope');
      // The file is named by repository and commit, not by its place in the controller's cache.
      expect(readyOf(failed)?.message).toMatch(/@[0-9a-f]{12}\/\.kluctl\.yaml/);
      expect(readyOf(failed)?.message).not.toContain('snapshots');
    });
  });
});

/** vars/real.yml of the example with the loadgenerator disabled. */
function realVarsWithoutLoadgenerator(): string {
  return [
    'redis:',
    '  architecture: replication',
    '  svcName: cart-redis',
    '',
    'services:',
    '  emailservice:',
    '    enabled: true',
    '  loadgenerator:',
    '    enabled: false',
    '',
  ].join('\n');
}

/** Every file below `dir` as path → content, for committing a copied project. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, full)] = await readFile(full, 'utf8');
  }
  return files;
}
