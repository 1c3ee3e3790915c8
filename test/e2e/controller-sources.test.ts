/**
 * Where the controller takes projects from: a git server behind basic auth (credentials from a Secret), SOPS keys
 * from a Secret, and Kluctl's gitops-deployment example, whose KluctlDeployments deploy further KluctlDeployments
 * (its upstream github.com URLs pointed at a local git server, and gitops.kluctl.io at Gantry's group).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgeKey, sopsEncrypt } from '../../src/sops/test-support.ts';
import { gantry, kubectl, kubectlJson, localContext } from '../support/cli.ts';
import {
  applyObject,
  getDeployment,
  installCrds,
  readyOf,
  startController,
  waitNotReady,
  waitReady as sharedWaitReady,
  type RunningController,
} from '../support/controller.ts';
import { EXAMPLES_DIR } from '../support/fixtures.ts';
import { createRepo, git, type TestRepo } from '../support/git-repo.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';

const NAMESPACE = `gantry-e2e-ctl-sources-${randomBytes(3).toString('hex')}`;
const API = 'gitops.gantry.dev/v1beta1';

/** The controller of the running describe block, watching only its namespace. */
let controller: RunningController;
const cleanups: Array<() => Promise<unknown>> = [];

async function applyNamespace(name: string): Promise<void> {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
}

const waitReady = (namespace: string, name: string, timeoutMs?: number) =>
  sharedWaitReady(namespace, name, () => controller.log(), timeoutMs);

async function secretValue(namespace: string, name: string, key: string): Promise<string | undefined> {
  const secret = await kubectlJson<{ data?: Record<string, string> }>(['get', 'secret', name, '-n', namespace]).catch(() => undefined);
  const encoded = secret?.data?.[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString();
}

/** Every file below `dir` as path → content, after `edit`. */
async function filesOf(dir: string, edit: (text: string) => string = (text) => text): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, full)] = edit(await readFile(full, 'utf8'));
  }
  return files;
}

describe('controller sources', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await installCrds();
    await applyNamespace(NAMESPACE);
    controller = await startController(['--namespace', NAMESPACE]);
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await controller?.stop();
    await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
  });

  describe('a git server behind basic auth', () => {
    let repo: TestRepo;
    let server: GitServer;

    beforeAll(async () => {
      repo = await createRepo({
        '.kluctl.yaml': 'discriminator: e2e-ctl-auth\ntargets:\n  - name: default\n',
        'deployment.yaml': 'deployments:\n  - path: app\n',
        'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-private-repo\n  namespace: ${NAMESPACE}\ndata:\n  a: b\n`,
      });
      server = await startGitServer(path.dirname(repo.remote), { username: 'deployer', password: 's3cret' });
      cleanups.push(
        () => repo.remove(),
        () => server.close(),
      );
    });

    function authDeployment(name: string, secret: string): Record<string, unknown> {
      return {
        apiVersion: API,
        kind: 'KluctlDeployment',
        metadata: { name, namespace: NAMESPACE },
        spec: {
          interval: '10m',
          source: { git: { url: server.url('remote.git') } },
          credentials: { git: [{ host: '127.0.0.1', secretRef: { name: secret } }] },
          target: 'default',
          context: 'default',
          prune: true,
          delete: true,
        },
      };
    }

    it('clones with the username and password of the credentials Secret', async () => {
      await kubectl([
        'create',
        'secret',
        'generic',
        'git-auth',
        '-n',
        NAMESPACE,
        '--from-literal=username=deployer',
        '--from-literal=password=s3cret',
      ]);
      cleanups.push(() => kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'private', '-n', NAMESPACE, '--wait=true']));
      await applyObject(authDeployment('private', 'git-auth'));
      await waitReady(NAMESPACE, 'private');
      expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'from-private-repo', '-n', NAMESPACE])).data).toEqual({ a: 'b' });
    });

    it('fails readably with a wrong password, without showing it', async () => {
      await kubectl([
        'create',
        'secret',
        'generic',
        'git-auth-wrong',
        '-n',
        NAMESPACE,
        '--from-literal=username=deployer',
        '--from-literal=password=wrong-password',
      ]);
      cleanups.push(() => kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'private-wrong', '-n', NAMESPACE, '--wait=true']));
      await applyObject(authDeployment('private-wrong', 'git-auth-wrong'));
      const failed = await waitNotReady(NAMESPACE, 'private-wrong');
      expect(readyOf(failed)?.message).toContain(server.url('remote.git'));
      expect(JSON.stringify(failed.status)).not.toContain('wrong-password');
    });
  });

  describe('SOPS-encrypted secrets', () => {
    it('decrypts with the age key of spec.decryption.secretRef', async () => {
      const age = await createAgeKey();
      cleanups.push(() => age.remove());
      const plain = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: decrypted\n  namespace: ${NAMESPACE}\nstringData:\n  password: from-sops\n`;
      const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient, encryptedRegex: '^(data|stringData)$' });
      const repo = await createRepo({
        '.kluctl.yaml': 'discriminator: e2e-ctl-sops\ntargets:\n  - name: default\n',
        'deployment.yaml': 'deployments:\n  - path: app\n',
        'app/secret.yaml': encrypted,
      });
      cleanups.push(
        () => repo.remove(),
        () => kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', 'sops', '-n', NAMESPACE, '--wait=true']),
      );
      await kubectl(['create', 'secret', 'generic', 'sops-keys', '-n', NAMESPACE, `--from-literal=identity.agekey=${age.identity}`]);
      await applyObject({
        apiVersion: API,
        kind: 'KluctlDeployment',
        metadata: { name: 'sops', namespace: NAMESPACE },
        spec: {
          interval: '10m',
          source: { git: { url: repo.url } },
          target: 'default',
          context: 'default',
          delete: true,
          decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
        },
      });
      await waitReady(NAMESPACE, 'sops');
      expect(await secretValue(NAMESPACE, 'decrypted', 'password')).toBe('from-sops');
    });
  });

  describe("Kluctl's gitops-deployment example", () => {
    let repo: TestRepo;
    let server: GitServer;
    const args = () => ['-t', 'gitops', '-a', 'cluster_name=test.example.com'];

    let ownController: RunningController;
    let previous: RunningController;

    beforeAll(async () => {
      previous = controller;
      // The example's KluctlDeployments live in kluctl-gitops; this block's controller watches that namespace.
      ownController = await startController(['--namespace', 'kluctl-gitops']);
      controller = ownController;
      repo = await createRepo({});
      server = await startGitServer(path.dirname(repo.remote));
      const url = server.url('remote.git');
      const localize = (text: string) =>
        text.replaceAll('gitops.kluctl.io/v1beta1', API).replaceAll('https://github.com/kluctl/kluctl-examples.git', url);
      const files: Record<string, string> = {};
      for (const dir of ['gitops-deployment', 'simple', 'simple-helm']) {
        for (const [file, text] of Object.entries(await filesOf(path.join(EXAMPLES_DIR, dir), localize))) files[`${dir}/${file}`] = text;
      }
      await repo.commit(files, 'kluctl-examples, served locally');
      cleanups.push(
        () => repo.remove(),
        () => server.close(),
      );
    });
    afterAll(async () => {
      // Deleting the bootstrap needs this controller to remove its finalizers.
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
      await ownController.stop();
      controller = previous;
    });

    it('bootstraps with gantry deploy, then the controller deploys every application and itself', async () => {
      const checkout = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-gitops-'));
      const work = path.join(checkout, 'repo');
      await git(['clone', '--quiet', server.url('remote.git'), work]);
      const project = ['--project-dir', path.join(work, 'gitops-deployment'), '--context', await localContext()];
      cleanups.push(
        () => rm(checkout, { recursive: true, force: true }),
        async () => {
          await gantry(['delete', ...args(), ...project, '-y']);
          await kubectl(['wait', '--for=delete', 'namespace/kluctl-gitops', 'namespace/simple-test', '--timeout=120s']).catch(
            () => undefined,
          );
        },
      );
      const deployed = await gantry(['deploy', ...args(), ...project, '-y']);
      expect(deployed.code, deployed.stderr).toBe(0);

      for (const name of ['gitops', 'app1', 'app2']) await waitReady('kluctl-gitops', name, 240_000);
      const nginx = await kubectlJson<Record<string, any>>(['get', 'deployment', 'nginx-deployment', '-n', 'simple-test']);
      expect(nginx.metadata.labels['kluctl.io/discriminator']).toBe('kluctl-examples-simple-simple');
      const app2 = await getDeployment('kluctl-gitops', 'app2');
      expect(app2.status.lastDeployResult.newObjects).toBeGreaterThan(0);
      // The gitops deployment deploys what `gantry deploy` already did: nothing new, nothing changed.
      const gitops = await getDeployment('kluctl-gitops', 'gitops');
      expect(gitops.status.lastDeployResult.newObjects).toBe(0);
      expect(gitops.status.lastDeployResult.changedObjects).toBe(0);
    });
  });
});
