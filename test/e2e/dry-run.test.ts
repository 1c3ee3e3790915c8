/**
 * Commands that promise not to write, proven on the real cluster: every one of them runs against a deployed project
 * that exercises each kind of deletion (deleteObjects, `kluctl.io/delete`, hooks with each delete policy, pre-delete
 * hooks, an orphan to prune, the whole target to delete, its Namespace included) beside a foreign object, while a
 * watch on every resource the API server serves (support/write-watch.ts) records what is persisted in the project's
 * namespace and of its cluster-scoped objects. It must record nothing, and every object must keep its uid and
 * resourceVersion: `diff`, `deploy --dry-run` (with and without `--prune`), `prune --dry-run`, `delete --dry-run`,
 * and the controller with `spec.dryRun` (deploy with prune, and the deletion of the KluctlDeployment), its drift
 * detection, its diff requests and `gantry gitops deploy|prune --dry-run`. The controller's own bookkeeping (the
 * KluctlDeployments' status, Events and results) lives in a namespace of its own, outside the watch.
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/kube/cluster.ts';
import { DISCRIMINATOR_LABEL } from '../../src/render/postprocess.ts';
import { gantry, gantryJson, KUBECONFIG, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';
import {
  applyObject,
  getDeployment,
  installCrds,
  kluctlDeployment,
  reconcileNow,
  startController,
  waitFor,
  waitReady,
  type RunningController,
} from '../support/controller.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { watchWrites, type WriteWatch } from '../support/write-watch.ts';

const NS = 'gantry-e2e-dry-run';
const GITOPS_NS = 'gantry-e2e-dry-run-gitops';
const DISCRIMINATOR = 'gantry-e2e-dry-run';

const configMap = (name: string, data: Record<string, string>, annotations: Record<string, string> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, annotations }, data });
const hook = (name: string, phase: string, policy: string) =>
  configMap(name, { hook: phase }, { 'kluctl.io/hook': phase, 'kluctl.io/hook-delete-policy': policy });

/** The project as first deployed for real; `edited` is what every dry run then sees (one changed, one orphan). */
function projectFiles(edited: boolean): Record<string, string | null> {
  return {
    '.kluctl.yaml': `discriminator: ${DISCRIMINATOR}\ntargets:\n  - name: default\n`,
    'deployment.yaml': [
      'deployments:',
      '  - path: ns',
      '  - barrier: true',
      '  - path: app',
      `  - deleteObjects: [{kind: ConfigMap, name: doomed, namespace: ${NS}}]`,
      '',
    ].join('\n'),
    'ns/namespace.yaml': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }),
    'app/kept.yaml': configMap('kept', { value: 'kept' }),
    'app/changed.yaml': configMap('changed', { value: edited ? 'edited' : 'first' }),
    'app/orphan.yaml': edited ? null : configMap('orphan', { value: 'orphan' }),
    'app/marked.yaml': configMap('marked', {}, { 'kluctl.io/delete': 'true' }),
    'app/hook-before.yaml': hook('hook-before', 'pre-deploy', 'before-hook-creation'),
    'app/hook-succeeded.yaml': hook('hook-succeeded', 'post-deploy', 'hook-succeeded'),
    'app/hook-failed.yaml': hook('hook-failed', 'post-deploy', 'hook-failed'),
    'app/hook-pre-delete.yaml': hook('hook-pre-delete', 'pre-delete', 'before-hook-creation'),
    'app/hook-post-delete.yaml': hook('hook-post-delete', 'post-delete', 'hook-succeeded'),
  };
}

let context = '';
let dir = '';
let args: string[] = [];
let repo: TestRepo;
let controller: RunningController;
let cluster: Cluster;
let watch: WriteWatch;

async function writeFiles(files: Record<string, string | null>): Promise<void> {
  for (const [file, content] of Object.entries(files)) {
    if (content === null) await rm(path.join(dir, file), { force: true });
    else await writeFile(path.join(dir, file), content);
  }
}

/** A KluctlDeployment of the edited project, in the controller's namespace, deploying to the local cluster. */
async function createDeployment(name: string, spec: Record<string, unknown>): Promise<void> {
  await applyObject(kluctlDeployment(GITOPS_NS, name, repo.url, spec));
}

describe('commands that promise not to write', { timeout: 600_000 }, () => {
  beforeAll(async () => {
    context = await localContext();
    cluster = Cluster.connect({ kubeconfig: KUBECONFIG });
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true']);
    await kubectl(['create', 'namespace', GITOPS_NS]).catch(() => undefined);
    dir = await writeProject(projectFiles(false) as Record<string, string>);
    args = ['-t', 'default', '--project-dir', dir, '--context', context];
    const first = await gantryJson(['deploy', '-y', ...args]);
    expect(first.result.errors).toEqual([]);
    await writeFiles(projectFiles(true));
    repo = await createRepo();
    await repo.commit(projectFiles(true));
    // What the dry runs would delete: objects deleteObjects and kluctl.io/delete name, and a foreign object that
    // only the Namespace's deletion would take with it.
    for (const name of ['doomed', 'marked', 'foreign']) await kubectl(['create', 'configmap', name, '-n', NS]);
    // The API server's own writes into a new namespace end before the watch starts.
    await waitFor(
      async () => (await kubectl(['get', 'serviceaccount,configmap', '-n', NS, '-o', 'name'])).includes('kube-root-ca.crt'),
      30_000,
    );
    await waitFor(async () => (await kubectl(['get', 'serviceaccount', '-n', NS, '-o', 'name'])).includes('default'), 30_000);
    await installCrds();
    controller = await startController(['--namespace', GITOPS_NS]);
    watch = await watchWrites(cluster, { namespace: NS, labelKey: DISCRIMINATOR_LABEL, discriminator: DISCRIMINATOR });
  });

  afterAll(async () => {
    await watch?.stop().catch(() => undefined);
    await controller?.stop();
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', GITOPS_NS, '--wait=false']).catch(() => undefined);
    await gantryJson(['delete', '-y', ...args]).catch(() => undefined);
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await removeCopy(dir);
    await repo?.remove();
    await cluster?.close();
  });

  // Each test's commands are done when it ends: a write shows up here, under the test that made it.
  afterEach(() => expect(watch.writes).toEqual([]));

  it('diff shows the deletions and the change, and says nothing was changed', async () => {
    const { code, result } = await gantryJson(['diff', ...args]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.deletedObjects)).toEqual([`${NS}/ConfigMap/doomed`, `${NS}/ConfigMap/marked`]);
    expect(names(result.changedObjects)).toContain(`${NS}/ConfigMap/changed`);
    expect(names(result.orphanObjects)).toEqual([`${NS}/ConfigMap/orphan`]);
    const text = await gantry(['diff', ...args]);
    expect(text.stdout).toMatch(/\nDry run: nothing was changed in the cluster\.\n$/);
  });

  it('deploy --dry-run, with and without --prune, runs every hook and deletion as a dry run', async () => {
    const plain = await gantryJson(['deploy', '--dry-run', ...args]);
    expect(plain.result.errors).toEqual([]);
    expect(names(plain.result.appliedHooks)).toEqual([
      `${NS}/ConfigMap/hook-before`,
      `${NS}/ConfigMap/hook-failed`,
      `${NS}/ConfigMap/hook-succeeded`,
    ]);
    const pruning = await gantryJson(['deploy', '--dry-run', '--prune', '-y', ...args]);
    expect(pruning.result.errors).toEqual([]);
    expect(names(pruning.result.deletedObjects)).toEqual([`${NS}/ConfigMap/doomed`, `${NS}/ConfigMap/marked`, `${NS}/ConfigMap/orphan`]);
  });

  it('prune --dry-run and delete --dry-run report what they would delete', async () => {
    const prune = await gantryJson(['prune', '--dry-run', '-y', ...args]);
    expect(prune.result.errors).toEqual([]);
    expect(names(prune.result.deletedObjects)).toEqual([`${NS}/ConfigMap/orphan`]);
    const deletion = await gantryJson(['delete', '--dry-run', '-y', ...args]);
    expect(deletion.result.errors).toEqual([]);
    expect(names(deletion.result.deletedObjects)).toEqual(
      [`Namespace/${NS}`, ...['changed', 'hook-before', 'hook-failed', 'kept', 'orphan'].map((name) => `${NS}/ConfigMap/${name}`)].sort(),
    );
    expect(names(deletion.result.appliedHooks)).toEqual([`${NS}/ConfigMap/hook-post-delete`, `${NS}/ConfigMap/hook-pre-delete`]);
  });

  it('a dry run asks before deleting as the real command does, and refuses without a terminal', async () => {
    for (const command of [
      ['delete', '--dry-run'],
      ['prune', '--dry-run'],
      ['deploy', '--dry-run', '--prune'],
    ]) {
      const run = await gantry([...command, ...args]);
      expect(run.code, run.stderr).toBe(1);
      if (command[0] !== 'deploy') expect(run.stderr).toMatch(/^Objects to delete \(dry run: nothing will be deleted\):$/m);
      expect(run.stdout).toMatch(/\(dry run: nothing will be deleted\) Refusing without a terminal to ask on: pass --yes/);
    }
  });

  it('the controller with spec.dryRun deploys and prunes as a dry run, and deletes as one when the KluctlDeployment goes', async () => {
    await createDeployment('dry', { dryRun: true, prune: true, delete: true });
    const ready = await waitReady(GITOPS_NS, 'dry', () => controller.log());
    expect(ready.status.lastDeployResult.commandInfo.dryRun).toBe(true);
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'dry', '-n', GITOPS_NS, '--wait=true', '--timeout=120s']);
    const events = await kubectlJson(['get', 'events', '-n', GITOPS_NS, '--field-selector', 'involvedObject.name=dry']);
    expect(events.items.map((event) => event.message)).toContainEqual(
      expect.stringMatching(/^would have deleted \(dry run\) \d+ object\(s\)$/),
    );
  });

  it("the controller's drift detection and diff requests write nothing", async () => {
    await createDeployment('manual', { manual: true, prune: true, delete: false });
    const drifted = await waitFor(async () => {
      const deployment = await getDeployment(GITOPS_NS, 'manual');
      return deployment.status?.lastDriftDetectionResult ? deployment : undefined;
    }, 120_000);
    expect(drifted.status.lastDriftDetectionResultMessage).toMatch(/drift/);
    await kubectl([
      'annotate',
      '--overwrite',
      'kluctldeployments.gitops.gantry.dev',
      'manual',
      '-n',
      GITOPS_NS,
      `kluctl.io/request-diff=${Date.now()}`,
    ]);
    await waitFor(async () => (await getDeployment(GITOPS_NS, 'manual')).status?.diffRequestResult?.endTime, 120_000);
    await reconcileNow(GITOPS_NS, 'manual', () => controller.log());
  });

  it('gantry gitops deploy --dry-run --prune and gitops prune --dry-run write nothing', async () => {
    const select = ['-n', GITOPS_NS, '--name', 'manual', '--controller-namespace', GITOPS_NS];
    const deploy = await gantry(['gitops', 'deploy', ...select, '--dry-run', '--prune', '-o', 'json']);
    expect(deploy.code, deploy.stderr).toBe(0);
    const prune = await gantry(['gitops', 'prune', ...select, '--dry-run', '-o', 'json']);
    expect(prune.code, prune.stderr).toBe(0);
    expect(names(JSON.parse(prune.stdout).deletedObjects)).toEqual([`${NS}/ConfigMap/orphan`]);
  });

  it('after all of them, the watch saw no write and every object kept its uid and resourceVersion', async () => {
    expect(await watch.stop()).toEqual([]);
    const left = (await kubectlJson(['get', 'configmaps', '-n', NS])).items.map((item) => item.metadata.name);
    expect(left.sort()).toEqual([
      'changed',
      'doomed',
      'foreign',
      'hook-before',
      'hook-failed',
      'kept',
      'kube-root-ca.crt',
      'marked',
      'orphan',
    ]);
  });
});
