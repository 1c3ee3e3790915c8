/**
 * Kluctl projects in OCI registries, end to end against distribution's registry on 127.0.0.1 (open, and behind
 * htpasswd basic auth): `gantry oci push` writes the artifact `kluctl oci push` writes (Flux's media types, the
 * created/source/revision and io.kluctl.image.git_info annotations, a gzipped tar of the project without what
 * .gitignore excludes); `gantry deploy` deploys a project with an `oci:` include (a tag, a subDir) with credentials
 * from KLUCTL_REGISTRY_* variables; the controller reconciles a KluctlDeployment with `spec.source.oci` and
 * `spec.credentials.oci` Ready, and one whose `spec.sourceRef` is a Flux OCIRepository (its real CRD; the test plays
 * source-controller, storing the pushed layer as the artifact). A wrong password fails the CLI and the controller with
 * a message naming the registry URL and never the password.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { list } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOciRegistry, type OciRegistry } from '../support/chart-server.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  configMapProject,
  configMapValue,
  installCrds,
  kluctlDeployment,
  readyOf,
  startController,
  waitNotReady,
  waitReady,
  type RunningController,
} from '../support/controller.ts';
import { writeProject } from '../support/fixtures.ts';
import { installOciRepositoryCrd, ociRepository, publishArtifact, startArtifactServer, type ArtifactServer } from '../support/flux.ts';
import { createRepo, git, type TestRepo } from '../support/git-repo.ts';

const NS = `gantry-e2e-oci-${randomBytes(3).toString('hex')}`;
const USER = 'e2e-pusher';
const PASSWORD = `pw-${randomBytes(6).toString('hex')}`;
const WRONG_PASSWORD = `wrong-${randomBytes(6).toString('hex')}`;

let open: OciRegistry;
let locked: OciRegistry;
let controller: RunningController;
let artifacts: ArtifactServer;
const cleanups: Array<() => Promise<unknown>> = [];

/** `host:port` of a registry. */
const hostOf = (registry: OciRegistry) => registry.url.slice('oci://'.length);

/** The KLUCTL_REGISTRY_* variables of one credentials set for the locked registry. */
const registryEnv = (password: string) => ({
  KLUCTL_REGISTRY_HOST: hostOf(locked),
  KLUCTL_REGISTRY_USERNAME: USER,
  KLUCTL_REGISTRY_PASSWORD: password,
});

interface PushResult {
  url: string;
  repository: string;
  tag: string;
  digest: string;
}

/** `gantry oci push -o json` of `dir`, failing the test with the output when it fails. */
async function push(dir: string, url: string, extra: string[] = []): Promise<PushResult> {
  const run = await gantry(['oci', 'push', '--url', url, '--project-dir', dir, '-o', 'json', ...extra]);
  if (run.code !== 0) throw new Error(`gantry oci push ${url} failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(run.stdout) as PushResult;
}

/** A document of the open registry (`/v2/<repository>/<what>`), as JSON or bytes. */
async function registryGet(repository: string, what: string, accept = 'application/vnd.oci.image.manifest.v1+json'): Promise<Buffer> {
  const response = await fetch(`http://${hostOf(open)}/v2/${repository}/${what}`, { headers: { accept } });
  if (!response.ok) throw new Error(`GET ${what}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** A Kluctl project of ConfigMaps in NS whose discriminator is unique to `name`. */
function project(name: string, configMaps: Record<string, string>): Record<string, string> {
  return configMapProject(NS, `e2e-oci-${NS}-${name}`, configMaps);
}

describe('Kluctl projects in OCI registries', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    [open, locked] = await Promise.all([startOciRegistry(), startOciRegistry({ username: USER, password: PASSWORD })]);
    artifacts = await startArtifactServer();
    cleanups.push(
      () => open.close(),
      () => locked.close(),
      () => artifacts.close(),
    );
    await installCrds();
    // Before the controller starts, so that it watches OCIRepositories.
    await installOciRepositoryCrd();
    await kubectl(['create', 'namespace', NS]);
    controller = await startController(['--namespace', NS]);
  });
  afterAll(async () => {
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(
      () => undefined,
    );
    await controller?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  });

  describe('gantry oci push', () => {
    let repo: TestRepo;
    let pushed: PushResult;
    let commit: string;

    beforeAll(async () => {
      repo = await createRepo({ ...project('pushed', { pushed: 'one' }), '.gitignore': 'local-notes.txt\n' });
      commit = (await git(['rev-parse', 'HEAD'], { cwd: path.join(path.dirname(repo.remote), 'work') })).stdout.trim();
      cleanups.push(() => repo.remove());
      await writeFile(path.join(path.dirname(repo.remote), 'work/local-notes.txt'), 'not for the artifact\n');
      pushed = await push(path.join(path.dirname(repo.remote), 'work'), `${open.url}/projects/pushed:v1`, [
        '--annotation',
        'team=platform',
      ]);
    });

    it("prints kluctl's {url, repository, tag, digest}", () => {
      expect(pushed).toEqual({
        url: `${open.url}/projects/pushed@${pushed.digest}`,
        repository: `${hostOf(open)}/projects/pushed`,
        tag: 'v1',
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      });
    });

    it("writes Flux's media types and kluctl's annotations, and a layer without .git and ignored files", async () => {
      const manifest = JSON.parse((await registryGet('projects/pushed', 'manifests/v1')).toString()) as Record<string, any>;
      expect(manifest.mediaType).toBe('application/vnd.oci.image.manifest.v1+json');
      expect(manifest.config.mediaType).toBe('application/vnd.cncf.flux.config.v1+json');
      expect(manifest.layers.map((layer: { mediaType: string }) => layer.mediaType)).toEqual([
        'application/vnd.cncf.flux.content.v1.tar+gzip',
      ]);
      expect(manifest.annotations).toMatchObject({
        team: 'platform',
        'org.opencontainers.image.revision': commit,
        'org.opencontainers.image.source': repo.remote,
        'org.opencontainers.image.created': expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      });
      expect(JSON.parse(manifest.annotations['io.kluctl.image.git_info'])).toEqual({
        url: repo.remote,
        ref: { branch: 'main' },
        subDir: '',
        commit,
        dirty: false,
      });
      const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-oci-layer-'));
      cleanups.push(() => rm(scratch, { recursive: true, force: true }));
      await writeFile(path.join(scratch, 'layer.tgz'), await registryGet('projects/pushed', `blobs/${manifest.layers[0].digest}`));
      const entries: string[] = [];
      await list({ file: path.join(scratch, 'layer.tgz'), onReadEntry: (entry) => void entries.push(entry.path) });
      expect(entries.sort()).toEqual(['.gitignore', '.kluctl.yaml', 'app/', 'app/pushed.yaml', 'deployment.yaml']);
    });

    it('fails with a wrong password, naming the registry and not the password', async () => {
      const dir = path.join(path.dirname(repo.remote), 'work');
      const run = await gantry([
        'oci',
        'push',
        '--url',
        `${locked.url}/projects/refused`,
        '--project-dir',
        dir,
        '--registry-creds',
        `${hostOf(locked)}=${USER}:${WRONG_PASSWORD}`,
      ]);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain(`pushing artifact failed: ${locked.url}/projects/refused: the registry refused the credentials`);
      expect(run.stdout + run.stderr).not.toContain(WRONG_PASSWORD);
    });
  });

  describe('an oci: include deployed with the CLI', () => {
    let root: string;

    beforeAll(async () => {
      const included = await writeProject({
        'deployment.yaml': 'deployments:\n  - include: sub\n',
        'sub/deployment.yaml': 'deployments:\n  - path: app\n',
        'sub/app/included.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: included\n  namespace: ${NS}\ndata:\n  value: "from-oci"\n`,
      });
      cleanups.push(() => rm(included, { recursive: true, force: true }));
      await push(included, `${locked.url}/projects/included:v2`, ['--registry-creds', `${hostOf(locked)}/projects/*=${USER}:${PASSWORD}`]);
      root = await writeProject({
        '.kluctl.yaml': `discriminator: e2e-oci-${NS}-cli\ntargets:\n  - name: default\n`,
        'deployment.yaml': `deployments:\n  - oci:\n      url: ${locked.url}/projects/included\n      ref:\n        tag: v2\n      subDir: sub\n`,
      });
      cleanups.push(() => rm(root, { recursive: true, force: true }));
    });

    it('pulls the artifact with the KLUCTL_REGISTRY_* credentials and deploys it', async () => {
      const context = await kubectl(['config', 'current-context']);
      const run = await gantry(['deploy', '--project-dir', root, '-t', 'default', '--context', context, '-o', 'json'], {
        env: registryEnv(PASSWORD),
      });
      expect(run.code, run.stderr).toBe(0);
      expect(await configMapValue(NS, 'included')).toBe('from-oci');
    });

    it('fails with a wrong password, naming the registry URL and not the password', async () => {
      const context = await kubectl(['config', 'current-context']);
      const run = await gantry(['deploy', '--project-dir', root, '-t', 'default', '--context', context], {
        env: registryEnv(WRONG_PASSWORD),
      });
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).toContain(
        `deployments[0]: ${locked.url}/projects/included:v2: the registry refused the credentials for ${hostOf(locked)}`,
      );
      expect(run.stdout + run.stderr).not.toContain(WRONG_PASSWORD);
    });
  });

  describe('the controller', () => {
    beforeAll(async () => {
      const dir = await writeProject(project('source', { 'from-oci-source': 'controller' }));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      await push(dir, `${locked.url}/projects/source:stable`, ['--registry-creds', `${hostOf(locked)}=${USER}:${PASSWORD}`]);
      for (const [name, password] of [
        ['oci-auth', PASSWORD],
        ['oci-auth-wrong', WRONG_PASSWORD],
      ] as const) {
        await kubectl([
          'create',
          'secret',
          'generic',
          name,
          '-n',
          NS,
          `--from-literal=username=${USER}`,
          `--from-literal=password=${password}`,
        ]);
      }
    });

    function ociDeployment(name: string, secret: string): Record<string, unknown> {
      return kluctlDeployment(NS, name, '', {
        source: { oci: { url: `${locked.url}/projects/source`, ref: { tag: 'stable' } } },
        credentials: { oci: [{ registry: hostOf(locked), repository: 'projects/*', secretRef: { name: secret } }] },
      });
    }

    it('reconciles spec.source.oci Ready with the credentials of spec.credentials.oci', async () => {
      await applyObject(ociDeployment('oci-source', 'oci-auth'));
      const ready = await waitReady(NS, 'oci-source', () => controller.log());
      expect(await configMapValue(NS, 'from-oci-source')).toBe('controller');
      expect(ready.status.observedCommit).toMatch(/^stable@sha256:[0-9a-f]{64}$/);
    });

    it('is not Ready with a wrong password, naming the registry URL and not the password', async () => {
      await applyObject(ociDeployment('oci-source-wrong', 'oci-auth-wrong'));
      const failed = await waitNotReady(NS, 'oci-source-wrong');
      expect(readyOf(failed)?.message).toContain(`${locked.url}/projects/source:stable: the registry refused the credentials`);
      expect(JSON.stringify(failed.status)).not.toContain(WRONG_PASSWORD);
    });

    it('reconciles a Flux OCIRepository sourceRef Ready', async () => {
      const dir = await writeProject(project('flux', { 'from-oci-repository': 'flux' }));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const pushed = await push(dir, `${open.url}/projects/flux`);
      // What source-controller stores for an OCIRepository: the artifact's layer, as its revision <tag>@<digest>.
      const manifest = JSON.parse((await registryGet('projects/flux', `manifests/${pushed.digest}`)).toString()) as Record<string, any>;
      const layer = await registryGet('projects/flux', `blobs/${manifest.layers[0].digest}`);
      await applyObject(ociRepository(NS, 'flux-oci', `${open.url}/projects/flux`));
      await publishArtifact(artifacts, NS, 'flux-oci', {
        served: { bytes: layer, digest: manifest.layers[0].digest },
        revision: `latest@${pushed.digest}`,
        kind: 'OCIRepository',
      });
      await applyObject(
        kluctlDeployment(NS, 'oci-repository', '', { source: undefined, sourceRef: { kind: 'OCIRepository', name: 'flux-oci' } }),
      );
      const ready = await waitReady(NS, 'oci-repository', () => controller.log());
      expect(await configMapValue(NS, 'from-oci-repository')).toBe('flux');
      expect(ready.status.observedCommit).toBe(`latest@${pushed.digest}`);
      expect((await kubectlJson<Record<string, any>>(['get', 'ocirepositories.source.toolkit.fluxcd.io', 'flux-oci', '-n', NS])).kind).toBe(
        'OCIRepository',
      );
    });
  });
});
