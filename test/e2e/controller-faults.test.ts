/**
 * A controller killed with SIGKILL in the middle of a deploy (waiting for a claim's readiness): a new controller
 * process takes over unaided. Until the dead one's target lock expires its status says who holds the target; then
 * it deploys, the KluctlDeployment ends Ready at the commit, and exactly one deploy result exists for that commit
 * (the killed deploy kept none, and none ran twice).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  installCrds,
  kluctlDeployment,
  readyOf,
  startController,
  waitFor,
  waitReady,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, git, type TestRepo } from '../support/git-repo.ts';

const NS = 'gantry-e2e-controller-faults';
const DISCRIMINATOR = 'gantry-e2e-controller-faults';
const STORAGE_CLASS = 'e2e-controller-faults';
const VOLUME = 'e2e-controller-faults-claim';

const configMap = (name: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\ndata:\n  value: "${name}"\n`;

let repo: TestRepo;
const controllers: RunningController[] = [];
const controllerArgs = ['--namespace', NS, '--command-result-namespace', NS];

beforeAll(async () => {
  await installCrds();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true']);
  await kubectl(['delete', 'pv', VOLUME, '--ignore-not-found']);
  await kubectl(['create', 'namespace', NS]);
  repo = await createRepo({
    '.kluctl.yaml': `discriminator: ${DISCRIMINATOR}\ntargets:\n  - name: default\n`,
    'deployment.yaml': 'deployments:\n  - path: first\n  - path: claim\n    waitReadiness: true\n  - barrier: true\n  - path: second\n',
    'first/before.yaml': configMap('before'),
    // A class no provisioner serves: the claim stays Pending until the test makes its volume.
    'claim/claim.yaml': `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: claim\n  namespace: ${NS}\nspec:\n  storageClassName: ${STORAGE_CLASS}\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n`,
    'second/after.yaml': configMap('after'),
  });
}, 120_000);

afterAll(async () => {
  await kubectl([
    'delete',
    'kluctldeployments.gitops.gantry.dev',
    '--all',
    '-n',
    NS,
    '--ignore-not-found',
    '--wait=true',
    '--timeout=60s',
  ]).catch(() => undefined);
  for (const controller of controllers) await controller.stop();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  await kubectl(['delete', 'pv', VOLUME, '--ignore-not-found']);
  await repo.remove();
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

    await applyObject({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: VOLUME },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: STORAGE_CLASS,
        hostPath: { path: '/tmp/e2e-controller-faults' },
        claimRef: { namespace: NS, name: 'claim' },
      },
    });
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
