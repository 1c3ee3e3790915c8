/**
 * `gantry up` end to end, as a user runs it: a fresh management cluster (started for this file, removed after),
 * `gantry up --runtime local` writing and pushing the fleet repository and bootstrapping it, then `git push` alone:
 * a ServiceDeployment file added under services/ runs its service on the cluster, `git rm` removes it. A re-run is
 * idempotent and keeps a user's edit.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clusterDown, clusterUp } from '../../scripts/cluster/cluster.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { toYaml } from '../../src/yaml.ts';
import { gantry } from '../support/cli.ts';
import { git } from '../support/git-repo.ts';

const MGMT = clusterLayout('test-up');
const CONTEXT = 'gantry-test-up';

// Each step waits on the server's git poll (10 s) and two agent syncs.
describe('gantry up', { timeout: 180_000 }, () => {
  let root: string;
  let dir: string;
  let remote: string;
  let stateDir: string;
  const env = () => ({ KUBECONFIG: MGMT.kubeconfig, XDG_CONFIG_HOME: path.join(root, 'config') });
  const kubectl = async (args: string[]) => (await execa(path.join(MGMT.bin, 'kubectl'), args, { env: env() })).stdout;
  /** `gantry <args>`, failing the test on a non-zero exit. */
  const run = async (args: string[]) => {
    const result = await gantry(args, { env: env() });
    if (result.code !== 0) throw new Error(`gantry ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
    return result;
  };
  const upLocal = (extra: string[]) =>
    run(['up', '--dir', dir, '--context', CONTEXT, '--runtime', 'local', '--state-dir', stateDir, '-o', 'json', ...extra]);
  const commit = async (message: string) => {
    await git(['-c', 'user.name=Fleet Admin', '-c', 'user.email=admin@example.com', 'commit', '--quiet', '-am', message], { cwd: dir });
    await git(['push', '--quiet', 'origin', 'HEAD:main'], { cwd: dir });
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'gantry-up-'));
    dir = path.join(root, 'fleet');
    remote = path.join(root, 'fleet.git');
    stateDir = path.join(root, 'state');
    await git(['init', '--quiet', '--bare', '--initial-branch=main', remote]);
    // Fresh: whatever an interrupted run left is removed first.
    await clusterDown({ layout: MGMT });
    await clusterUp({ layout: MGMT });
  });

  afterAll(async () => {
    await run(['down', '--state-dir', stateDir]).catch(() => undefined);
    await clusterDown({ layout: MGMT });
    await rm(root, { recursive: true, force: true });
  });

  test('writes, pushes and bootstraps the fleet repository; the management cluster runs its own agent', async () => {
    const { stdout } = await upLocal(['--git-url', `file://${remote}`]);
    const result = JSON.parse(stdout) as { repository: { files: { created: string[]; kept: string[] }; commit: string }; server: string };
    expect(result.repository.files.created).toEqual(
      expect.arrayContaining([
        'README.md',
        'bootstrap/deployment.yaml',
        'bootstrap/fleet/apps.yaml',
        'clusters/README.md',
        'services/README.md',
      ]),
    );
    // Pushed: the remote has what was written.
    const pushed = (await git(['--git-dir', remote, 'ls-tree', '-r', '--name-only', 'main'])).stdout;
    expect(pushed).toContain('bootstrap/fleet/apps.yaml');
    await waitFor(
      'the root apps Ready',
      async () => {
        const apps = JSON.parse(
          await kubectl(['get', 'servicedeployments.deployments.gantry.dev', '-n', 'gantry-system', '-o', 'json']),
        ) as {
          items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
        };
        return (
          apps.items.length === 2 &&
          apps.items.every((app) => app.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        );
      },
      120_000,
    );
    const clusters = JSON.parse((await run(['cluster', 'list', '-o', 'json'])).stdout) as Array<{ name: string }>;
    expect(clusters.map((c) => c.name)).toEqual(['mgmt']);
  });

  test('a ServiceDeployment file pushed under services/ runs its service; git rm and push removes it', async () => {
    await writeFile(
      path.join(dir, 'services', 'hello.yaml'),
      toYaml({
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceDeployment',
        metadata: { name: 'hello', namespace: 'gantry-system' },
        spec: {
          namespace: 'hello',
          clusterRef: { name: 'mgmt' },
          repositoryRef: { name: 'gantry-fleet' },
          git: { ref: 'main', folder: 'apps/hello' },
        },
      }),
    );
    await execa('mkdir', ['-p', path.join(dir, 'apps', 'hello')]);
    await writeFile(
      path.join(dir, 'apps', 'hello', 'configmap.yaml'),
      toYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hello' }, data: { greeting: 'hi' } }),
    );
    await git(['add', '.'], { cwd: dir });
    await commit('hello');
    const map = await waitFor(
      'the ConfigMap of hello',
      () => kubectl(['get', 'configmap', 'hello', '-n', 'hello', '-o', 'jsonpath={.data.greeting}']).catch(() => undefined),
      120_000,
    );
    expect(map).toBe('hi');

    await git(['rm', '--quiet', 'services/hello.yaml'], { cwd: dir });
    await commit('no hello');
    await waitFor(
      'the ConfigMap of hello removed',
      async () => !(await kubectl(['get', 'configmaps', '-n', 'hello', '-o', 'name']).catch(() => '')).includes('configmap/hello'),
      120_000,
    );
    // The service's record goes once its agent has reported the deletion, after the ConfigMap went.
    const serviceNames = async () =>
      (JSON.parse((await run(['service', 'list', '-o', 'json'])).stdout) as Array<{ name: string }>).map((s) => s.name).sort();
    await waitFor('the service hello forgotten', async () => !(await serviceNames()).includes('hello'), 60_000);
    expect(await serviceNames()).toEqual(['clusters', 'services']);
  });

  test('a re-run changes nothing, and keeps and names a file the user edited', async () => {
    const readme = path.join(dir, 'services', 'README.md');
    await writeFile(readme, `${await readFile(readme, 'utf8')}\nOur team's notes.\n`);
    await commit('notes');
    const { stdout, stderr } = await upLocal([]);
    const result = JSON.parse(stdout) as {
      repository: { files: { created: string[]; upgraded: string[]; kept: string[] }; commit?: string };
      bootstrap: Record<string, number>;
    };
    expect(result.repository.files).toMatchObject({ created: [], upgraded: [], kept: ['services/README.md'] });
    expect(result.repository.commit).toBeUndefined();
    expect(result.bootstrap).toEqual({ newObjects: 0, changedObjects: 0, deletedObjects: 0 });
    expect(stderr).toContain('kept services/README.md');
    expect(await readFile(readme, 'utf8')).toContain("Our team's notes.");
  });

  test('bad input: a folder that is no repository and no --git-url is refused, naming the flag', async () => {
    const empty = await mkdtemp(path.join(root, 'bare-'));
    const refused = await gantry(['up', '--dir', empty, '--context', CONTEXT, '--runtime', 'local', '--state-dir', stateDir], {
      env: env(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the repository has no origin; give --git-url');
  });
});

// kwok nodes run no containers, so what runs in the cluster is checked as objects, readiness and RBAC.
describe('gantry up --runtime cluster', { timeout: 180_000 }, () => {
  let root: string;
  const env = () => ({ KUBECONFIG: MGMT.kubeconfig, XDG_CONFIG_HOME: path.join(root, 'config') });
  const kubectl = async (args: string[]) => (await execa(path.join(MGMT.bin, 'kubectl'), args, { env: env() })).stdout;

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'gantry-up-cluster-'));
    await git(['init', '--quiet', '--bare', '--initial-branch=main', path.join(root, 'fleet.git')]);
    await clusterDown({ layout: MGMT });
    await clusterUp({ layout: MGMT });
    // No volume provisioner here: a volume for the server's claim to bind.
    await execa(path.join(MGMT.bin, 'kubectl'), ['apply', '-f', '-'], {
      env: env(),
      input: toYaml({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'gantry-server-data' },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: path.join(root, 'volume') } },
      }),
    });
  });

  afterAll(async () => {
    await clusterDown({ layout: MGMT });
    await rm(root, { recursive: true, force: true });
  });

  test('runs the server, operator and agent as Deployments; the admin token is a Secret, never in git', async () => {
    const dir = path.join(root, 'fleet');
    const up = await gantry(
      [
        'up',
        '--dir',
        dir,
        '--git-url',
        `file://${root}/fleet.git`,
        '--context',
        CONTEXT,
        '--image',
        'registry.invalid/gantry:test',
        '-o',
        'json',
      ],
      { env: env() },
    );
    expect(up.code, up.stderr).toBe(0);
    const deployments = JSON.parse(await kubectl(['get', 'deployments', '-n', 'gantry-system', '-o', 'json'])) as {
      items: Array<{
        metadata: { name: string };
        status: { availableReplicas?: number };
        spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
      }>;
    };
    expect(deployments.items.map((d) => [d.metadata.name, d.status.availableReplicas])).toEqual([
      ['gantry-agent', 1],
      ['gantry-operator', 1],
      ['gantry-server', 1],
    ]);
    // The management cluster's agent runs with the deploy token the operator writes beside the Cluster resource.
    const agent = deployments.items.find((d) => d.metadata.name === 'gantry-agent')!;
    expect(agent.spec.template.spec.containers[0]!.args.join(' ')).toContain('--token-secret gantry-system/mgmt-deploy-token');
    const secret = await kubectl(['get', 'secret', 'gantry-admin-token', '-n', 'gantry-system', '-o', 'jsonpath={.data.token}']);
    const token = Buffer.from(secret, 'base64').toString();
    expect(token).toMatch(/^gantry-api-/);
    // git grep exits 1 when nothing matches.
    const pushed = await git(['--git-dir', path.join(root, 'fleet.git'), 'grep', '-l', 'gantry-api-', 'main']).then(
      (found) => found.stdout,
      () => '',
    );
    expect(pushed).toBe('');
    expect(up.stdout + up.stderr).not.toContain(token);
    // A re-run keeps the token: the server's first token and the operator's stay the same.
    expect((await gantry(['up', '--dir', dir, '--context', CONTEXT, '--image', 'registry.invalid/gantry:test'], { env: env() })).code).toBe(
      0,
    );
    expect(await kubectl(['get', 'secret', 'gantry-admin-token', '-n', 'gantry-system', '-o', 'jsonpath={.data.token}'])).toBe(secret);
  });
});
