/**
 * Faults, for real: the kube-apiserver of a cluster of this file's own is killed with SIGKILL in the middle of a deploy
 * (while it waits at a barrier), of a prune and of a delete (while they wait for deleted objects to go), then
 * started again. The command either finishes or fails with an error that says the API server could not be reached,
 * and the next run converges: every object there, every orphan gone, nothing reported deleted that is not, nothing
 * foreign touched. The same under `gantry controller run` in the middle of a reconcile: the controller survives, and
 * the KluctlDeployment ends Ready at its commit with one deploy result for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterDown, clusterUp, startApiServer, stopApiServer } from '../../scripts/cluster/cluster.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { run } from '../../src/exec.ts';
import { gantry, startGantry, type JsonResult } from '../support/cli.ts';
import { installCrds, kluctlDeployment, readyOf, startController, waitFor, type RunningController } from '../support/controller.ts';
import { createRepo, git, type TestRepo } from '../support/git-repo.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { bindClaim, pendingClaim } from '../support/volumes.ts';

const layout = clusterLayout('faults');
const NS = 'faults';
/** A class no provisioner serves: the claim stays Pending until the test binds it. */
const STORAGE_CLASS = 'e2e-faults';
const projects: string[] = [];

async function kubectl(args: readonly string[], input?: string): Promise<string> {
  return (await run('kubectl', ['--kubeconfig', layout.kubeconfig, ...args], input === undefined ? {} : { input })).stdout;
}

async function names(kind: string): Promise<string[]> {
  const list = JSON.parse(await kubectl(['get', kind, '-n', NS, '-o', 'json'])) as { items: Array<{ metadata: { name: string } }> };
  return list.items.map((item) => item.metadata.name).sort();
}

const configMap = (name: string, extra = '', namespace = NS) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n${extra}data:\n  value: "${name}"\n`;

/** A project whose deploy applies `first`, then waits for a PersistentVolumeClaim no one binds to be ready, then `second`. */
async function project(first: readonly string[], second: readonly string[], finalizer = false): Promise<string> {
  const extra = finalizer ? '  finalizers: [gantry.dev/e2e-faults]\n' : '';
  const files: Record<string, string> = {
    '.kluctl.yaml': 'discriminator: gantry-e2e-faults\ntargets:\n  - name: default\n',
    'deployment.yaml': `deployments:\n${first.length > 0 ? '  - path: first\n' : ''}  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: second\n`,
    'claim/claim.yaml': pendingClaim(NS, STORAGE_CLASS),
  };
  for (const name of first) files[`first/${name}.yaml`] = configMap(name, extra);
  for (const name of second) files[`second/${name}.yaml`] = configMap(name);
  const dir = await writeProject(files);
  projects.push(dir);
  return dir;
}

/** Binds `namespace`'s claim (see test/support/volumes.ts). */
async function bindFaultsClaim(namespace = NS): Promise<void> {
  await bindClaim(kubectl, { namespace, storageClass: STORAGE_CLASS, volume: `e2e-faults-${namespace}` });
}

/** A project of one item: ConfigMaps holding a finalizer, so that deleting them waits until the test releases them. */
async function finalizedProject(discriminator: string, names: readonly string[]): Promise<string> {
  const files: Record<string, string> = {
    '.kluctl.yaml': `discriminator: ${discriminator}\ntargets:\n  - name: default\n`,
    'deployment.yaml': 'deployments:\n  - path: held\n',
  };
  for (const name of names) files[`held/${name}.yaml`] = configMap(name, '  finalizers: [gantry.dev/e2e-faults]\n');
  const dir = await writeProject(files);
  projects.push(dir);
  return dir;
}

async function releaseFinalizers(names: readonly string[]): Promise<void> {
  for (const name of names) await kubectl(['patch', 'configmap', name, '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
}

/** resourceVersion of each ConfigMap `names` names: unchanged means untouched. */
async function versions(names: readonly string[]): Promise<string[]> {
  return Promise.all(names.map((name) => kubectl(['get', 'configmap', name, '-n', NS, '-o', 'jsonpath={.metadata.resourceVersion}'])));
}

const UNREACHABLE = /ECONNREFUSED|ECONNRESET|socket|connect|unreachable|API server/i;

const commandArgs = (verb: string, dir: string, ...more: string[]) => [
  verb,
  '-y',
  '-t',
  'default',
  '--project-dir',
  dir,
  '--kubeconfig',
  layout.kubeconfig,
  '--timeout',
  '90s',
  ...more,
];
const deployArgs = (dir: string, ...more: string[]) => commandArgs('deploy', dir, ...more);

beforeAll(async () => {
  await clusterUp({ layout });
  await kubectl(['create', 'namespace', NS]);
}, 120_000);

afterAll(async () => {
  await startApiServer(layout).catch(() => undefined);
  await clusterDown({ layout });
  for (const dir of projects) await removeCopy(dir);
}, 60_000);

describe('kube-apiserver killed and restarted', { timeout: 240_000 }, () => {
  it('in the middle of a deploy: the deploy finishes or names the unreachable API server, and the next one converges', async () => {
    const first = ['a1', 'a2', 'a3', 'a4', 'a5'];
    const second = ['b1', 'b2', 'b3'];
    const dir = await project(first, second);
    const deploy = startGantry(deployArgs(dir), { env: { KUBECONFIG: layout.kubeconfig } });
    await waitFor(
      async () => (await names('pvc').catch((): string[] => [])).includes('claim'),
      60_000,
      () => deploy.output.stderr,
    );

    await deploy.waitForOutput('stderr', /1 object\(s\) not ready yet/);

    await stopApiServer(layout);
    await startApiServer(layout);
    expect(deploy.output.stdout, `the deploy was still waiting when its API server went:\n${deploy.output.stderr}`).toBe('');
    await bindFaultsClaim();
    const code = await deploy.exited;
    const output = `${deploy.output.stdout}${deploy.output.stderr}`;
    console.error(`faults: deploy across the restart exited ${code}:\n${output.slice(-1500)}`);
    if (code !== 0) expect(output).toMatch(UNREACHABLE);

    const again = await gantry(deployArgs(dir), { env: { KUBECONFIG: layout.kubeconfig } });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await names('configmaps')).toEqual(expect.arrayContaining([...first, ...second]));
  });

  it('in the middle of a prune: it finishes or names the unreachable API server, reports what it deleted, and the next prune converges', async () => {
    const doomed = ['p1', 'p2', 'p3', 'p4', 'p5'];
    const deployed = await gantry(deployArgs(await project(doomed, ['kept'], true)), { env: { KUBECONFIG: layout.kubeconfig } });
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);

    // The finalizer holds the deleted ConfigMaps, so the prune waits for them to go.
    const next = await project([], ['kept']);
    const prune = startGantry(deployArgs(next, '--prune'), { env: { KUBECONFIG: layout.kubeconfig } });
    await prune.waitForOutput('stderr', /waiting for \d+ object\(s\) to disappear/, 60_000);
    await stopApiServer(layout);
    await startApiServer(layout);
    expect(prune.output.stdout, `the prune was still waiting when its API server went:\n${prune.output.stderr}`).toBe('');
    await releaseFinalizers(doomed);
    const code = await prune.exited;
    const output = `${prune.output.stdout}${prune.output.stderr}`;
    console.error(`faults: prune across the restart exited ${code}:\n${output.slice(-1500)}`);
    if (code === 0)
      expect(prune.output.stdout).toMatch(
        new RegExp(`Deleted objects:[\\s\\S]*${doomed.map((name) => `faults/ConfigMap/${name}`).join('[\\s\\S]*')}`),
      );
    else expect(output).toMatch(UNREACHABLE);

    const again = await gantry(deployArgs(next, '--prune'), { env: { KUBECONFIG: layout.kubeconfig } });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const left = await names('configmaps');
    expect(left).toContain('kept');
    for (const name of doomed) expect(left).not.toContain(name);
  });

  it('in the middle of a delete: it finishes or names the unreachable API server, reports deleted only what went, and the next delete converges', async () => {
    const discriminator = 'gantry-e2e-faults-delete';
    const doomed = ['d1', 'd2', 'd3', 'd4', 'd5'];
    const dir = await finalizedProject(discriminator, doomed);
    const env = { env: { KUBECONFIG: layout.kubeconfig } };
    const deployed = await gantry(deployArgs(dir), env);
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    // Not the target's: one of another target, and one with its discriminator that Gantry never applied.
    const foreign = ['other-target', 'same-label-not-applied'];
    await kubectl(
      ['create', '-f', '-'],
      configMap(foreign[0]!, '  labels: {kluctl.io/discriminator: gantry-e2e-faults-other}\n') +
        '---\n' +
        configMap(foreign[1]!, `  labels: {kluctl.io/discriminator: ${discriminator}}\n`),
    );
    const foreignVersions = await versions(foreign);

    const deleteArgs = commandArgs('delete', dir, '-o', 'json');
    const deletion = startGantry(deleteArgs, env);
    await deletion.waitForOutput('stderr', /waiting for 5 object\(s\) to disappear/, 60_000);
    await stopApiServer(layout);
    await startApiServer(layout);
    expect(deletion.output.stdout, `the delete was still waiting when its API server went:\n${deletion.output.stderr}`).toBe('');
    await releaseFinalizers(doomed);
    const code = await deletion.exited;
    console.error(`faults: delete across the restart exited ${code}:\n${deletion.output.stderr.slice(-1500)}`);
    const reported = (JSON.parse(deletion.output.stdout) as JsonResult).deletedObjects.map((ref) => ref.name).sort();
    if (code === 0) expect(reported).toEqual(doomed);
    else expect(deletion.output.stdout + deletion.output.stderr).toMatch(UNREACHABLE);
    // Reported deleted means gone, now that the finalizers are released.
    await waitFor(
      async () => (await names('configmaps')).every((name) => !reported.includes(name)),
      30_000,
      () => `${reported.join(', ')} gone`,
    );

    const again = await gantry(deleteArgs, env);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const secondReport = (JSON.parse(again.stdout) as JsonResult).deletedObjects.map((ref) => ref.name);
    // Nothing reported twice, nothing foreign reported; after a delete that finished, nothing was left to delete.
    const everyReport = [...reported, ...secondReport];
    expect(new Set(everyReport).size).toBe(everyReport.length);
    for (const name of everyReport) expect(doomed).toContain(name);
    if (code === 0) expect(secondReport).toEqual([]);
    const left = await names('configmaps');
    for (const name of doomed) expect(left).not.toContain(name);
    expect(await versions(foreign)).toEqual(foreignVersions);
  });
});

describe('kube-apiserver killed and restarted under the controller', { timeout: 240_000 }, () => {
  const namespace = 'faults-controller';
  let repo: TestRepo | undefined;
  let controller: RunningController | undefined;
  afterAll(async () => {
    await controller?.stop();
    await repo?.remove();
  });

  it('in the middle of a reconcile: the controller survives, and the KluctlDeployment ends Ready at the commit, deployed once', async () => {
    await installCrds(layout.kubeconfig);
    await kubectl(['create', 'namespace', namespace]);
    repo = await createRepo({
      '.kluctl.yaml': 'discriminator: gantry-e2e-faults-controller\ntargets:\n  - name: default\n',
      'deployment.yaml': 'deployments:\n  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: after\n',
      'claim/claim.yaml': pendingClaim(namespace, STORAGE_CLASS),
      'after/after.yaml': configMap('after', '', namespace),
    });
    const commit = (await git(['rev-parse', 'main'], { cwd: repo.remote })).stdout.trim();
    controller = await startController(['--namespace', namespace, '--command-result-namespace', namespace], {}, layout.kubeconfig);
    await kubectl(
      ['apply', '--server-side', '--field-manager=e2e', '-f', '-'],
      JSON.stringify(kluctlDeployment(namespace, 'app', repo.url, { retryInterval: '5s' })),
    );
    // The claim exists: the reconcile is in its deploy, waiting for the claim to be ready.
    await waitFor(async () => (await kubectl(['get', 'pvc', '-n', namespace, '-o', 'name'])).includes('claim'), 60_000, controller.log);

    await stopApiServer(layout);
    // Down long enough for the controller to meet it down: its watch relists, and fails.
    await waitFor(async () => (await controller!.log()).includes('cannot reach the Kubernetes API server'), 30_000, controller.log);
    await startApiServer(layout);
    expect(controller.running(), await controller.log()).toBe(true);
    await bindFaultsClaim(namespace);

    const deploymentNow = async (): Promise<Record<string, any>> =>
      JSON.parse(await kubectl(['get', 'kluctldeployments.gitops.gantry.dev', 'app', '-n', namespace, '-o', 'json']));
    const ready = await waitFor(
      async () => {
        const deployment = await deploymentNow();
        return readyOf(deployment)?.status === 'True' && deployment.status.observedGeneration === deployment.metadata.generation
          ? deployment
          : undefined;
      },
      120_000,
      async () => `app Ready: ${JSON.stringify(readyOf(await deploymentNow()))}\n${(await controller!.log()).slice(-4000)}`,
    );
    const complaints = (await controller.log()).split('\n').filter((line) => /"level":"(warn|error)"/.test(line));
    console.error(`faults: what the controller logged across the restart:\n${complaints.join('\n').slice(-3000)}`);
    expect(controller.running()).toBe(true);
    // A target Lease its failed deploy could not release (the API server was down) does not lock out its retry.
    expect(complaints.join('\n')).not.toContain('is being changed by');
    expect(ready.status.lastDeployResult.revision).toBe(commit);
    expect(ready.status.lastDeployResult.errors).toEqual([]);
    expect((await kubectl(['get', 'configmap', 'after', '-n', namespace, '-o', 'name'])).trim()).toBe('configmap/after');
    const results = JSON.parse(
      await kubectl(['get', 'secrets', '-n', namespace, '-l', 'gantry.dev/result-command=deploy', '-o', 'json']),
    ) as { items: unknown[] };
    expect(results.items).toHaveLength(1);
  });
});
