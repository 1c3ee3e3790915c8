/**
 * Flux interop of the GitOps controller end to end: KluctlDeployments whose `spec.sourceRef` names a Flux
 * source.toolkit.fluxcd.io/v1 GitRepository. The GitRepository CRD is source-controller's own (a released module,
 * through the Go module proxy), installed before the controller starts so that it watches GitRepositories; no
 * source-controller runs: the tests play its part, packing Kluctl projects as tar.gz artifacts, serving them on
 * 127.0.0.1 and writing status.artifact (url, digest, revision) and Ready through the status subresource.
 *
 * Covered: the artifact is downloaded, checked and deployed, and its revision recorded (observedCommit,
 * lastDeployResult.revision, projectKey); a newly published artifact is deployed without any request (the
 * GitRepository watch; the deployment's interval is 10 minutes), and how long that took is printed; an artifact
 * whose bytes do not match its digest makes the deployment not Ready, naming both digests, with nothing from it
 * applied, and the next good artifact recovers it; a GitRepository that does not exist, then one without an
 * artifact, give readable not-Ready messages, and once an artifact appears the project at `sourceRef.path` deploys.
 * The Flux Kluctl controller's own form (top-level `path`, `dependsOn`) reconciles with only its apiVersion changed:
 * prod waits, not Ready with DependencyNotReady, until test is Ready.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  getDeployment,
  installCrds,
  readyOf,
  startController,
  waitFor,
  type RunningController,
} from '../support/controller.ts';
import {
  gitRepository,
  gitRevision,
  installGitRepositoryCrd,
  packArtifact,
  publishArtifact,
  startArtifactServer,
  type ArtifactServer,
} from '../support/flux.ts';

const NS = `gantry-e2e-flux-${randomBytes(3).toString('hex')}`;
const API = 'gitops.gantry.dev/v1beta1';

let controller: RunningController;
let server: ArtifactServer;
const deployments: string[] = [];

/** A KluctlDeployment of the GitRepository `source` (context `default`: the controller's own cluster). */
function kluctlDeployment(name: string, sourceRef: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: API,
    kind: 'KluctlDeployment',
    metadata: { name, namespace: NS },
    // A long interval: anything that happens within the test was triggered by a watch, not by polling.
    spec: {
      interval: '10m',
      timeout: '2m',
      sourceRef: { kind: 'GitRepository', ...sourceRef },
      target: 'default',
      context: 'default',
      prune: true,
      delete: true,
    },
  };
}

/** A Kluctl project (one target) deploying ConfigMaps (name → data value) into the test namespace, under `dir`. */
function configMapProject(discriminator: string, configMaps: Record<string, string>, dir = ''): Record<string, string> {
  const prefix = dir ? `${dir}/` : '';
  const files: Record<string, string> = {
    [`${prefix}.kluctl.yaml`]: `discriminator: e2e-flux-${NS}-${discriminator}\ntargets:\n  - name: default\n`,
    [`${prefix}deployment.yaml`]: 'deployments:\n  - path: app\n',
  };
  for (const [name, value] of Object.entries(configMaps)) {
    files[`${prefix}app/${name}.yaml`] =
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\ndata:\n  value: "${value}"\n`;
  }
  return files;
}

async function configMapValue(name: string): Promise<string | undefined> {
  const found = await kubectlJson<{ items: Array<{ metadata: { name: string }; data?: { value?: string } }> }>([
    'get',
    'configmaps',
    '-n',
    NS,
  ]);
  return found.items.find((item) => item.metadata.name === name)?.data?.value;
}

async function describeDeployment(name: string): Promise<string> {
  const deployment = await getDeployment(NS, name).catch((error: Error) => ({ error: error.message }));
  return `${name}: ${JSON.stringify((deployment as Record<string, any>).status ?? deployment)}\n${(await controller.log()).slice(-4000)}`;
}

/** Waits until `check` accepts the deployment, describing its status and the controller's log on timeout. */
async function waitDeployment(
  name: string,
  what: string,
  check: (deployment: Record<string, any>) => boolean,
  timeoutMs = 120_000,
): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const deployment = await getDeployment(NS, name);
      return check(deployment) ? deployment : undefined;
    },
    timeoutMs,
    async () => `${what}\n${await describeDeployment(name)}`,
  );
}

function isReady(deployment: Record<string, any>): boolean {
  return readyOf(deployment)?.status === 'True' && deployment.status?.observedGeneration === deployment.metadata.generation;
}

async function applyDeployment(object: Record<string, unknown>): Promise<void> {
  deployments.push((object['metadata'] as { name: string }).name);
  await applyObject(object);
}

describe('gantry controller run with Flux GitRepository sources', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await installCrds();
    // Before the controller starts: it watches GitRepositories only when their API is served at startup.
    await installGitRepositoryCrd();
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }));
    server = await startArtifactServer();
    // Only this file's namespace: other files run controllers of their own.
    controller = await startController(['--namespace', NS]);
  });

  afterAll(async () => {
    for (const name of deployments) {
      await kubectl([
        'delete',
        'kluctldeployments.gitops.gantry.dev',
        name,
        '-n',
        NS,
        '--ignore-not-found',
        '--wait=true',
        '--timeout=120s',
      ]).catch(() => undefined);
    }
    await controller?.stop();
    await server?.close();
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  });

  describe('a GitRepository with artifacts', () => {
    let first: string;
    let second: string;

    beforeAll(async () => {
      await applyObject(gitRepository(NS, 'app'));
      first = gitRevision();
      await publishArtifact(server, NS, 'app', {
        served: await packArtifact(configMapProject('app', { settings: 'one' })),
        revision: first,
      });
    });

    it('deploys the artifact and records its revision', async () => {
      await applyDeployment(kluctlDeployment('app', { name: 'app' }));
      const deployment = await waitDeployment('app', 'app Ready', isReady);
      expect(await configMapValue('settings')).toBe('one');
      expect(deployment.status.observedCommit).toBe(first);
      expect(deployment.status.lastDeployResult.revision).toBe(first);
      expect(deployment.status.lastDeployResult.errors).toEqual([]);
      expect(deployment.status.projectKey).toEqual({ repoKey: `flux:${NS}/app`, subDir: '' });
      expect(server.requested.filter((path) => path.startsWith(`/gitrepository/${NS}/app/`))).toHaveLength(1);
    });

    it('deploys a newly published artifact without being asked', async () => {
      second = gitRevision();
      const artifact = await packArtifact(configMapProject('app', { settings: 'two' }));
      const published = Date.now();
      await publishArtifact(server, NS, 'app', { served: artifact, revision: second });
      const deployment = await waitDeployment(
        'app',
        `app deploying ${second}`,
        (current) => current.status?.lastDeployResult?.revision === second && isReady(current),
        60_000,
      );
      const elapsed = Date.now() - published;
      console.info(`new artifact deployed ${elapsed} ms after its GitRepository status was written`);
      expect(await configMapValue('settings')).toBe('two');
      expect(deployment.status.observedCommit).toBe(second);
      // No request annotation was ever set: the GitRepository watch did it.
      expect(deployment.status.reconcileRequestResult).toBeUndefined();
      expect(elapsed).toBeLessThan(60_000);
    });

    it('refuses an artifact that does not match its digest, applying nothing from it', async () => {
      const announced = await packArtifact(configMapProject('app', { settings: 'three' }));
      const served = await packArtifact(configMapProject('app', { settings: 'tampered', intruder: 'yes' }));
      await publishArtifact(server, NS, 'app', {
        served,
        revision: gitRevision(),
        digest: announced.digest,
        size: announced.bytes.byteLength,
      });
      const failed = await waitDeployment(
        'app',
        'app not Ready for the digest mismatch',
        (current) => readyOf(current)?.status === 'False',
      );
      const ready = readyOf(failed)!;
      expect(ready.reason).toBe('PrepareFailed');
      expect(ready.message).toContain(`GitRepository ${NS}/app`);
      expect(ready.message).toContain(announced.digest.split(':')[1]);
      expect(ready.message).toContain(served.digest.split(':')[1]);
      expect(ready.message).toMatch(/sha256/);
      expect(failed.status.observedCommit).toBe(second);
      expect(failed.status.lastDeployResult.revision).toBe(second);
      expect(await configMapValue('settings')).toBe('two');
      expect(await configMapValue('intruder')).toBeUndefined();

      // The next good artifact recovers it.
      const third = gitRevision();
      await publishArtifact(server, NS, 'app', { served: announced, revision: third });
      const recovered = await waitDeployment(
        'app',
        `app deploying ${third}`,
        (current) => current.status?.lastDeployResult?.revision === third && isReady(current),
      );
      expect(recovered.status.observedCommit).toBe(third);
      expect(await configMapValue('settings')).toBe('three');
      expect(await configMapValue('intruder')).toBeUndefined();
    });
  });

  describe('a GitRepository that is missing, then has no artifact', () => {
    it('says so, and deploys the project at sourceRef.path once an artifact appears', async () => {
      await applyDeployment(kluctlDeployment('late', { name: 'late', path: 'deploy' }));
      const missing = await waitDeployment(
        'late',
        'late not Ready: GitRepository not found',
        (current) => readyOf(current)?.status === 'False',
      );
      expect(readyOf(missing)?.reason).toBe('PrepareFailed');
      expect(readyOf(missing)?.message).toContain(`GitRepository ${NS}/late not found`);

      await applyObject(gitRepository(NS, 'late'));
      const empty = await waitDeployment(
        'late',
        'late not Ready: no artifact yet',
        (current) => readyOf(current)?.message?.includes('no artifact') === true,
      );
      expect(readyOf(empty)?.status).toBe('False');
      expect(readyOf(empty)?.message).toContain(`GitRepository ${NS}/late has no artifact yet`);

      const revision = gitRevision();
      const files = { ...configMapProject('late', { 'late-settings': 'arrived' }, 'deploy'), 'README.md': 'not part of the project\n' };
      const artifact = await packArtifact(files);
      await publishArtifact(server, NS, 'late', { served: artifact, revision });
      const deployment = await waitDeployment(
        'late',
        'late Ready',
        (current) => current.status?.lastDeployResult?.revision === revision && isReady(current),
      );
      expect(deployment.status.projectKey).toEqual({ repoKey: `flux:${NS}/late`, subDir: 'deploy' });
      expect(await configMapValue('late-settings')).toBe('arrived');
    });
  });
  describe("the Flux Kluctl controller's spelling: spec.path beside sourceRef, and dependsOn", () => {
    /** One project with targets test and prod, each its own ConfigMap and discriminator, in the folder `deploy`. */
    const project = (value: string): Record<string, string> => ({
      'deploy/.kluctl.yaml': `discriminator: e2e-fluxkluctl-${NS}-{{ target.name }}\ntargets:\n  - name: test\n  - name: prod\n`,
      'deploy/deployment.yaml': 'deployments:\n  - path: app\n',
      'deploy/app/configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fk-{{ target.name }}\n  namespace: ${NS}\ndata:\n  value: "${value}"\n`,
    });
    /** As the Flux Kluctl controller's docs write it, with only the apiVersion changed. */
    const fluxKluctlDeployment = (target: string, dependsOn?: string) => ({
      apiVersion: API,
      kind: 'KluctlDeployment',
      metadata: { name: `fk-${target}`, namespace: NS },
      spec: {
        interval: '10m',
        path: 'deploy',
        sourceRef: { kind: 'GitRepository', name: 'fluxkluctl' },
        timeout: '2m',
        target,
        context: 'default',
        prune: true,
        ...(dependsOn ? { dependsOn: [{ name: dependsOn }] } : {}),
      },
    });

    it('holds prod until test is Ready, then deploys both from the folder spec.path names', async () => {
      await applyObject(gitRepository(NS, 'fluxkluctl'));
      await applyDeployment(fluxKluctlDeployment('prod', 'fk-test'));
      await applyDeployment(fluxKluctlDeployment('test'));
      const held = await waitDeployment(
        'fk-prod',
        'prod held by its dependency',
        (current) => readyOf(current)?.reason === 'DependencyNotReady',
      );
      expect(readyOf(held)?.message).toContain(`dependencies not ready: ${NS}/fk-test (`);
      expect(held.status?.lastDeployResult).toBeUndefined();

      const revision = gitRevision();
      await publishArtifact(server, NS, 'fluxkluctl', { served: await packArtifact(project('released')), revision });
      const test = await waitDeployment('fk-test', 'test Ready', isReady);
      const prod = await waitDeployment('fk-prod', 'prod Ready after test', isReady);
      expect(Date.parse(prod.status.lastDeployResult.commandInfo.startTime)).toBeGreaterThanOrEqual(
        Date.parse(readyOf(test)!.lastTransitionTime),
      );
      expect(prod.status.projectKey).toEqual({ repoKey: `flux:${NS}/fluxkluctl`, subDir: 'deploy' });
      expect(await configMapValue('fk-test')).toBe('released');
      expect(await configMapValue('fk-prod')).toBe('released');
    });

    it('refuses spec.path and sourceRef.path naming different folders, saying so', async () => {
      const both = fluxKluctlDeployment('test');
      const conflicting = { ...both, metadata: { name: 'fk-conflict', namespace: NS } };
      (conflicting.spec as Record<string, unknown>)['sourceRef'] = { kind: 'GitRepository', name: 'fluxkluctl', path: 'elsewhere' };
      await applyDeployment(conflicting);
      const refused = await waitDeployment('fk-conflict', 'conflict refused', (current) => readyOf(current)?.status === 'False');
      expect(readyOf(refused)?.message).toContain('spec.path (deploy) and spec.sourceRef.path (elsewhere) name different folders');
    });
  });
});
