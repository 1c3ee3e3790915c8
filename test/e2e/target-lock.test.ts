/**
 * The target lock on the real cluster: a deploy refuses (or waits for) a target someone else is changing, a dry run
 * ignores the lock, and two deploys of one target started together run one after the other, so the outcome is one of
 * them whole, never a mix in which one pruned what the other had just applied.
 */
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/kube/cluster.ts';
import { microTime } from '../../src/kube/lease.ts';
import { TARGET_LOCK_NAMESPACE, targetLockName, withTargetLock } from '../../src/deploy/target-lock.ts';
import { gantry, KUBECONFIG, kubectl, kubectlJson, localContext, startGantry } from '../support/cli.ts';
import {
  applyObject,
  configMapProject,
  installCrds,
  kluctlDeployment,
  readyOf,
  reconcileNow,
  startController,
  waitNotReady,
  waitReady,
} from '../support/controller.ts';
import { createRepo } from '../support/git-repo.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';

const NS = 'gantry-e2e-target-lock';
const DISCRIMINATOR = 'gantry-e2e-target-lock';
const LEASE = targetLockName(DISCRIMINATOR);

let context = '';
const projects: string[] = [];

async function project(configMaps: Record<string, string>): Promise<string> {
  const dir = await writeProject(configMapProject(NS, DISCRIMINATOR, configMaps));
  projects.push(dir);
  return dir;
}

/** The deployed ConfigMaps of the target, by name. */
async function deployedNames(): Promise<string[]> {
  const list = await kubectlJson(['get', 'configmaps', '-n', NS, '-l', `kluctl.io/discriminator=${DISCRIMINATOR}`]);
  return list.items.map((item) => item['metadata'].name as string).sort();
}

/** Takes the target's Lease as another program would, valid for a minute. */
async function holdLease(holder: string): Promise<void> {
  const now = microTime(new Date());
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: LEASE, namespace: TARGET_LOCK_NAMESPACE },
    spec: { holderIdentity: `${holder} 0123abcd`, leaseDurationSeconds: 60, acquireTime: now, renewTime: now },
  };
  await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=e2e', '-f', '-'], JSON.stringify(lease));
}

async function releaseLease(): Promise<void> {
  await kubectl(['delete', 'lease', LEASE, '-n', TARGET_LOCK_NAMESPACE, '--ignore-not-found']);
}

const deployArgs = (dir: string, ...more: string[]) => [
  'deploy',
  '-y',
  '--prune',
  '-t',
  'default',
  '--project-dir',
  dir,
  '--context',
  context,
  ...more,
];

beforeAll(async () => {
  context = await localContext();
  await releaseLease();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true']);
  await kubectl(['create', 'namespace', NS]);
});

afterAll(async () => {
  await releaseLease();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  for (const dir of projects) await removeCopy(dir);
});

describe('the target lock', { timeout: 120_000 }, () => {
  it('refuses a deploy while someone else holds the target, naming them; a dry run goes on', async () => {
    const dir = await project({ first: 'v1' });
    await holdLease('the release pipeline');
    try {
      const refused = await gantry(deployArgs(dir, '--timeout', '1s'));
      expect(refused.code).toBe(1);
      // The error is the command's result, on stdout.
      expect(refused.stdout).toContain(`the target with discriminator '${DISCRIMINATOR}' is being changed by the release pipeline`);
      expect(refused.stdout).toContain(`Lease ${TARGET_LOCK_NAMESPACE}/${LEASE}`);
      expect(await deployedNames()).toEqual([]);

      const diff = await gantry(['diff', '-t', 'default', '--project-dir', dir, '--context', context]);
      expect(diff.code, diff.stderr).toBe(0);
    } finally {
      await releaseLease();
    }
  });

  it('waits within --timeout for the holder to finish, then deploys and releases the lock', async () => {
    const dir = await project({ first: 'v1' });
    await holdLease('a colleague');
    const waiting = startGantry(deployArgs(dir, '--timeout', '60s'));
    try {
      await waiting.waitForOutput('stderr', /the target is being changed by a colleague; waiting up to 60s/);
      expect(await deployedNames()).toEqual([]);
      await releaseLease();
      expect(await waiting.exited, waiting.output.stderr).toBe(0);
    } finally {
      await waiting.stop();
    }
    expect(await deployedNames()).toEqual(['first']);
    const lease = await kubectlJson<{ spec: { holderIdentity?: string } }>(['get', 'lease', LEASE, '-n', TARGET_LOCK_NAMESPACE]);
    expect(lease.spec.holderIdentity ?? '').toBe('');
  });

  it('is taken while the target renders, and released with nothing applied when the render fails', async () => {
    const dir = await project({ unapplied: 'v1', broken: '{{ no_such_var.value }}' });
    const failed = await gantry(deployArgs(dir));
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('app/broken.yaml');
    // The cluster was read under the lock before the render ended, and nothing of the render reached it.
    expect(failed.stderr).toContain(`reading objects of discriminator '${DISCRIMINATOR}'`);
    expect(await deployedNames()).not.toContain('unapplied');
    const lease = await kubectlJson<{ spec: { holderIdentity?: string } }>(['get', 'lease', LEASE, '-n', TARGET_LOCK_NAMESPACE]);
    expect(lease.spec.holderIdentity ?? '').toBe('');
  });

  it("leaves nothing on the caller's signal, which may live as long as a controller's leadership", async () => {
    const cluster = Cluster.connect({ kubeconfig: KUBECONFIG });
    const leadership = new AbortController();
    const quiet = { step: () => undefined };
    try {
      const before = getEventListeners(leadership.signal, 'abort').length;
      for (const round of [1, 2, 3]) {
        const result = await withTargetLock(
          cluster,
          DISCRIMINATOR,
          { holder: 'a reconcile', waitMs: 0 },
          { progress: quiet, signal: leadership.signal },
          async () => round,
        );
        expect(result).toBe(round);
      }
      expect(getEventListeners(leadership.signal, 'abort').length).toBe(before);
    } finally {
      await cluster.close();
    }
  });

  it('runs two deploys of one target started together one after the other: the result is one of them, whole', async () => {
    const [left, right] = await Promise.all([project({ left1: 'l', left2: 'l' }), project({ right1: 'r', right2: 'r' })]);
    // Both start while the test holds the target, so they really run at once (on a loaded machine two processes
    // started together may otherwise not overlap), then race for it when it is released.
    await holdLease('the starting gun');
    const deploys = [startGantry(deployArgs(left, '--timeout', '60s')), startGantry(deployArgs(right, '--timeout', '60s'))];
    try {
      for (const deploy of deploys)
        await deploy.waitForOutput('stderr', /the target is being changed by the starting gun; waiting up to 60s/);
      await releaseLease();
      const codes = await Promise.all(deploys.map((deploy) => deploy.exited));
      expect(codes, deploys.map((deploy) => deploy.output.stderr).join('\n')).toEqual([0, 0]);
    } finally {
      await Promise.all(deploys.map((deploy) => deploy.stop()));
    }
    // Whichever ran second pruned the first's objects after applying its own: never a mix, never nothing.
    expect([
      ['left1', 'left2'],
      ['right1', 'right2'],
    ]).toContainEqual(await deployedNames());
  });
});

describe('the controller beside a CLI', { timeout: 180_000 }, () => {
  it('fails a reconcile while a CLI holds the target, saying who, and deploys once it is free', async () => {
    await installCrds();
    const repo = await createRepo(configMapProject(NS, DISCRIMINATOR, { fromgit: 'g' }));
    const controller = await startController();
    try {
      await holdLease('gantry deploy (alice@laptop, pid 42)');
      await applyObject(kluctlDeployment(NS, 'locked', repo.url));
      const failed = await waitNotReady(NS, 'locked');
      expect(readyOf(failed)?.message).toContain(`'${DISCRIMINATOR}' is being changed by gantry deploy (alice@laptop, pid 42)`);
      expect(await deployedNames()).not.toContain('fromgit');

      await releaseLease();
      await reconcileNow(NS, 'locked', controller.log);
      await waitReady(NS, 'locked', controller.log);
      // The controller prunes: what the CLI deployed above under the same discriminator is gone.
      expect(await deployedNames()).toEqual(['fromgit']);
    } finally {
      await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'locked', '-n', NS, '--ignore-not-found', '--wait=true']);
      await controller.stop();
      await repo.remove();
    }
  });
});
