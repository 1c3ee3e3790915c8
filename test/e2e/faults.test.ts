/**
 * Faults, for real: the kube-apiserver of a cluster of this file's own is killed with SIGKILL in the middle of a deploy
 * (while it waits at a barrier) and in the middle of a prune (while it waits for deleted objects to go), then
 * started again. The command either finishes or fails with an error that says the API server could not be reached,
 * and the next run converges: every object there, every orphan gone, nothing reported deleted that is not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterDown, clusterUp, startApiServer, stopApiServer } from '../../scripts/cluster/cluster.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { run } from '../../src/exec.ts';
import { gantry, startGantry } from '../support/cli.ts';
import { waitFor } from '../support/controller.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';

const layout = clusterLayout('faults');
const NS = 'faults';
const projects: string[] = [];

async function kubectl(args: readonly string[], input?: string): Promise<string> {
  return (await run('kubectl', ['--kubeconfig', layout.kubeconfig, ...args], input === undefined ? {} : { input })).stdout;
}

async function names(kind: string): Promise<string[]> {
  const list = JSON.parse(await kubectl(['get', kind, '-n', NS, '-o', 'json'])) as { items: Array<{ metadata: { name: string } }> };
  return list.items.map((item) => item.metadata.name).sort();
}

const configMap = (name: string, extra = '') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\n${extra}data:\n  value: "${name}"\n`;

/** A project whose deploy applies `first`, then waits for a PersistentVolumeClaim no one binds to be ready, then `second`. */
async function project(first: readonly string[], second: readonly string[], finalizer = false): Promise<string> {
  const extra = finalizer ? '  finalizers: [gantry.dev/e2e-faults]\n' : '';
  const files: Record<string, string> = {
    '.kluctl.yaml': 'discriminator: gantry-e2e-faults\ntargets:\n  - name: default\n',
    'deployment.yaml': `deployments:\n${first.length > 0 ? '  - path: first\n' : ''}  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: second\n`,
    // A class no provisioner serves: the claim stays Pending until bindClaim makes it a volume.
    'claim/claim.yaml': `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: claim\n  namespace: ${NS}\nspec:\n  storageClassName: e2e-faults\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n`,
  };
  for (const name of first) files[`first/${name}.yaml`] = configMap(name, extra);
  for (const name of second) files[`second/${name}.yaml`] = configMap(name);
  const dir = await writeProject(files);
  projects.push(dir);
  return dir;
}

/** Makes the claim's volume, as a provisioner would: the cluster's PersistentVolume controller then binds the claim. */
async function bindClaim(): Promise<void> {
  const volume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'e2e-faults-claim' },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'e2e-faults',
      hostPath: { path: '/tmp/e2e-faults' },
      claimRef: { namespace: NS, name: 'claim' },
    },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify(volume));
}

const deployArgs = (dir: string, ...more: string[]) => [
  'deploy',
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
    await bindClaim();
    const code = await deploy.exited;
    const output = `${deploy.output.stdout}${deploy.output.stderr}`;
    console.error(`faults: deploy across the restart exited ${code}:\n${output.slice(-1500)}`);
    if (code !== 0) expect(output).toMatch(/ECONNREFUSED|ECONNRESET|socket|connect|unreachable|API server/i);

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
    for (const name of doomed)
      await kubectl(['patch', 'configmap', name, '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    const code = await prune.exited;
    const output = `${prune.output.stdout}${prune.output.stderr}`;
    console.error(`faults: prune across the restart exited ${code}:\n${output.slice(-1500)}`);
    if (code === 0)
      expect(prune.output.stdout).toMatch(
        new RegExp(`Deleted objects:[\\s\\S]*${doomed.map((name) => `faults/ConfigMap/${name}`).join('[\\s\\S]*')}`),
      );
    else expect(output).toMatch(/ECONNREFUSED|ECONNRESET|socket|connect|unreachable|API server/i);

    const again = await gantry(deployArgs(next, '--prune'), { env: { KUBECONFIG: layout.kubeconfig } });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const left = await names('configmaps');
    expect(left).toContain('kept');
    for (const name of doomed) expect(left).not.toContain(name);
  });
});
