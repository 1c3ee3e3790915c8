/**
 * `gantry server` as a process and the client commands a user types against it: login, cluster create, list,
 * get, token, delete, and their errors.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type GantryProcess, gantry, startGantry } from '../support/cli.ts';
import { createRepo } from '../support/git-repo.ts';

describe('gantry server and the cluster commands', () => {
  let dir: string;
  let server: GantryProcess;
  let url: string;
  let adminToken: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-cli-'));
    env = { XDG_CONFIG_HOME: path.join(dir, 'config'), GANTRY_DATA_DIR: path.join(dir, 'data') };
    server = startGantry(['server', '--listen', '127.0.0.1:0'], { env });
    adminToken = (await server.waitForOutput('stderr', /^\s+(gantry-api-\S+)$/m))[1]!;
    url = (await server.waitForOutput('stdout', /"url":"(http:[^"]+)"/))[1]!;
  });

  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('commands before login say how to log in', async () => {
    const run = await gantry(['cluster', 'list'], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('not logged in: run gantry login --server URL --token TOKEN');
  });

  test('login refuses a wrong token and saves a right one', async () => {
    const wrong = await gantry(['login', '--server', url, '--token', 'gantry-api-wrong'], { env });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('unknown or revoked API token');
    const right = await gantry(['login', '--server', url, '--token', adminToken], { env });
    expect(right.code).toBe(0);
    expect(right.stderr).toContain(`logged in to ${url}`);
  });

  test('creates, lists, shows, re-keys and deletes a cluster', async () => {
    const created = await gantry(['cluster', 'create', 'dev', '--tag', 'tier=web', '--tag', 'region=eu', '-o', 'json'], { env });
    expect(created.code).toBe(0);
    const body = JSON.parse(created.stdout) as { cluster: { name: string; tags: Record<string, string> }; deployToken: string };
    expect(body.cluster).toMatchObject({ name: 'dev', tags: { tier: 'web', region: 'eu' } });
    expect(body.deployToken).toMatch(/^gantry-deploy-/);

    const text = await gantry(['cluster', 'create', 'prod'], { env });
    expect(text.stdout).toMatch(/cluster prod created\ndeploy token \(shown only now\):\n\n {2}gantry-deploy-\S+\n/);

    const list = await gantry(['cluster', 'list'], { env });
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+HANDLE\s+TAGS\s+DISTRO\s+KUBERNETES\s+AGENT\s+HEALTH\s+PINGED$/);
    expect(list.stdout).toMatch(/^dev\s+dev\s+tier=web,region=eu\s+UNKNOWN\s+never$/m);
    expect((await gantry(['cluster', 'get', 'dev', '-o', 'yaml'], { env })).stdout).toContain('name: dev\n');
    expect((await gantry(['cluster', 'get', 'dev'], { env })).stdout).toMatch(/^tags:\s+tier=web,region=eu$/m);
    expect((await gantry(['cluster', 'get', 'dev'], { env })).stdout).toMatch(/^wanted:\s+\S+ \(the server's own\)$/m);

    const token = await gantry(['cluster', 'token', 'dev', '--revoke-others'], { env });
    expect(token.stdout).toMatch(/^gantry-deploy-\S+\n$/);
    expect(token.stdout.trim()).not.toBe(body.deployToken);

    expect((await gantry(['cluster', 'delete', 'dev'], { env })).code).toBe(0);
    expect((await gantry(['cluster', 'list', '-o', 'json'], { env })).stdout).not.toContain('"dev"');
  });

  test('bad input and unknown clusters: exit 1 and an error naming the field or the cluster', async () => {
    const bad = await gantry(['cluster', 'create', 'Bad_Name'], { env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: body\.name must match pattern .* \(body\.name\)\n$/);
    const missing = await gantry(['cluster', 'get', 'nowhere'], { env });
    expect(missing).toMatchObject({ code: 1, stderr: 'error: cluster "nowhere" not found\n' });
    const tag = await gantry(['cluster', 'create', 'x', '--tag', 'novalue'], { env });
    expect(tag.code).not.toBe(0);
    expect(tag.stderr).toContain("'novalue' is not key=value");
  });

  test('adds git repositories and reports whether the server can fetch them', async () => {
    const repo = await createRepo({ 'README.md': 'fleet\n' });
    try {
      const added = await gantry(['repo', 'add', repo.url], { env });
      expect(added.code).toBe(0);
      expect(added.stdout).toMatch(/^health:\s+PULLABLE$/m);
      const missing = await gantry(['repo', 'add', 'file:///nonexistent/repo.git', '-o', 'json'], { env });
      expect(missing.code).toBe(1);
      expect(JSON.parse(missing.stdout)).toMatchObject({
        health: 'FAILED',
        lastError: expect.stringContaining('file:///nonexistent/repo.git'),
      });
      const list = await gantry(['repo', 'list'], { env });
      expect(list.stdout).toMatch(new RegExp(`^${repo.url}\\s+none\\s+PULLABLE\\s`, 'm'));
      expect((await gantry(['repo', 'delete', 'file:///nonexistent/repo.git'], { env })).code).toBe(0);
      expect((await gantry(['repo', 'get', 'file:///nonexistent/repo.git'], { env })).stderr).toContain('not found');
    } finally {
      await repo.remove();
    }
  });

  test('creates services, lists them and their revisions, rolls back, and explains a --wait that times out', async () => {
    const repo = await createRepo({ 'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  v: "1"\n' });
    try {
      await gantry(['cluster', 'create', 'svc-cluster'], { env });
      await gantry(['repo', 'add', repo.url], { env });
      const source = ['--cluster', 'svc-cluster', '--namespace', 'web', '--repo', repo.url, '--ref', 'main', '--folder', 'web'];
      const waited = await gantry(['service', 'create', 'web', ...source, '--config', 'password=s3cret', '--wait', '--timeout', '2s'], {
        env,
      });
      expect(waited.code).toBe(1);
      expect(waited.stderr).toMatch(/^error: service web is not healthy at revision 1 after 2s: status stale; applied revision none\n$/);
      const bad = await gantry(['service', 'create', 'other', ...source.slice(0, -2), '--folder', 'nowhere'], { env });
      expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('(body.git.folder)') });

      expect((await gantry(['service', 'update', 'web', '--cluster', 'svc-cluster', '--config', 'password=other'], { env })).code).toBe(0);
      const list = await gantry(['service', 'list', '--cluster', 'svc-cluster'], { env });
      expect(list.stdout).toMatch(/^CLUSTER\s+NAME\s+NAMESPACE\s+STATUS\s+REVISION\s+APPLIED\s+COMPONENTS\n/);
      expect(list.stdout).toMatch(/^svc-cluster\s+web\s+web\s+stale\s+2\s+-\s+0\/0$/m);
      const noDocs = await gantry(['service', 'docs', 'web', '--cluster', 'svc-cluster'], { env });
      expect(noDocs).toMatchObject({ code: 0, stdout: 'service web has no docsPath\n' });
      const revisions = await gantry(['service', 'revisions', 'web', '--cluster', 'svc-cluster', '-o', 'json'], { env });
      expect((JSON.parse(revisions.stdout) as Array<{ number: number }>).map((r) => r.number)).toEqual([2, 1]);
      const rolledBack = await gantry(['service', 'rollback', 'web', '--cluster', 'svc-cluster', '--revision', '1'], { env });
      expect(rolledBack.stdout).toMatch(/^revision:\s+3 \([0-9a-f]{12}\), applied: none$/m);
      expect(rolledBack.stdout).toMatch(/^config:\s+password$/m);
      expect(rolledBack.stdout).not.toContain('s3cret');
      expect(rolledBack.stdout).toMatch(
        /^pinned:\s+at revision 3 by \S+, \S+; nothing waits \(gantry service release web --cluster svc-cluster ends the pin\)$/m,
      );
      // An update while pinned is recorded and waits; release applies it.
      expect((await gantry(['service', 'update', 'web', '--cluster', 'svc-cluster', '--config', 'password=third'], { env })).code).toBe(0);
      const pinned = await gantry(['service', 'get', 'web', '--cluster', 'svc-cluster'], { env });
      expect(pinned.stdout).toMatch(/^revision:\s+3 /m);
      expect(pinned.stdout).toMatch(/revision 4 waits for: gantry service release web --cluster svc-cluster$/m);
      const released = await gantry(['service', 'release', 'web', '--cluster', 'svc-cluster'], { env });
      expect(released.stdout).toMatch(/^revision:\s+4 /m);
      expect(released.stdout).not.toContain('pinned:');
      const again = await gantry(['service', 'release', 'web', '--cluster', 'svc-cluster'], { env });
      expect(again).toMatchObject({ code: 1, stderr: expect.stringContaining('service web is not pinned') });
      // Every revision runs the one commit: rejecting its content leaves nothing to go back to, and says so.
      const rejected = await gantry(['service', 'reject', 'web', '--cluster', 'svc-cluster', '--revision', '4', '--reason', 'bad data'], {
        env,
      });
      expect(rejected.code).toBe(0);
      expect(rejected.stdout).toMatch(/^rejected \S+ at [0-9a-f]{12} for svc-cluster\/web \(rejection (\S+)\)$/m);
      expect(rejected.stdout).toContain('svc-cluster/web: runs it with no earlier revision to go back to');
      const id = /\(rejection (\S+)\)/.exec(rejected.stdout)![1]!;
      const rejections = await gantry(['rejection', 'list'], { env });
      expect(rejections.stdout).toMatch(new RegExp(`^${id}\\s.*svc-cluster/web\\s.*bad data$`, 'm'));
      expect((await gantry(['rejection', 'delete', id], { env })).stderr).toBe(`rejection ${id} lifted\n`);
      expect((await gantry(['service', 'delete', 'web', '--cluster', 'svc-cluster', '--detach'], { env })).stderr).toBe(
        'service web detached\n',
      );
    } finally {
      await repo.remove();
    }
  });

  test('sets, lists and shows contexts; a service binds one; a bound context is not deleted', async () => {
    const repo = await createRepo({ 'app/configmap.yaml.liquid': 'kind: ConfigMap\n' });
    try {
      const file = path.join(dir, 'network.yaml');
      await writeFile(file, 'vpc: vpc-1\nsubnets: [a, b]\n');
      const set = await gantry(['context', 'set', 'network', '--from-file', file, '--set', 'region=eu', '-o', 'json'], { env });
      expect(JSON.parse(set.stdout)).toMatchObject({ name: 'network', configuration: { vpc: 'vpc-1', subnets: ['a', 'b'], region: 'eu' } });
      expect((await gantry(['context', 'set', 'empty'], { env })).stderr).toBe('error: set needs --from-file or --set key=value\n');

      await gantry(['cluster', 'create', 'ctx-cluster'], { env });
      await gantry(['repo', 'add', repo.url], { env });
      const source = ['--cluster', 'ctx-cluster', '--namespace', 'app', '--repo', repo.url, '--ref', 'main', '--folder', 'app'];
      const unknown = await gantry(['service', 'create', 'app', ...source, '--context', 'nowhere'], { env });
      expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining('(body.contexts.0)') });
      const created = await gantry(['service', 'create', 'app', ...source, '--context', 'network'], { env });
      expect(created.stdout).toMatch(/^contexts:\s+network$/m);

      const list = await gantry(['context', 'list'], { env });
      expect(list.stdout).toMatch(/^NAME\s+KEYS\s+BOUND BY\s+UPDATED\n/);
      expect(list.stdout).toMatch(/^network\s+region,subnets,vpc\s+ctx-cluster\/app\s+\S+$/m);
      expect((await gantry(['context', 'get', 'network', '-o', 'yaml'], { env })).stdout).toContain('vpc: vpc-1\n');
      expect(await gantry(['context', 'delete', 'network'], { env })).toMatchObject({
        code: 1,
        stderr: expect.stringContaining('context network is bound by service ctx-cluster/app'),
      });
      await gantry(['service', 'delete', 'app', '--cluster', 'ctx-cluster', '--detach'], { env });
      expect((await gantry(['context', 'delete', 'network'], { env })).stderr).toBe('context network deleted\n');
    } finally {
      await repo.remove();
    }
  });

  test('a global service follows cluster tags; removing its last copy is held until --confirm', async () => {
    const repo = await createRepo({ 'hello/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n' });
    try {
      await gantry(['repo', 'add', repo.url], { env });
      await gantry(['cluster', 'create', 'edge-1', '--tag', 'tier=edge'], { env });
      const created = await gantry(
        [
          'globalservice',
          'create',
          'hello',
          '--tag',
          'tier=edge',
          '--namespace',
          'hello',
          '--repo',
          repo.url,
          '--ref',
          'main',
          '--folder',
          'hello',
        ],
        { env },
      );
      expect(created.stdout).toMatch(/^clusters:\s+edge-1 \(stale\)$/m);
      await gantry(['cluster', 'create', 'edge-2', '--tag', 'tier=edge'], { env });
      expect((await gantry(['globalservice', 'list'], { env })).stdout).toMatch(/^hello\s+tier=edge\s+hello\/hello\s+edge-1,edge-2$/m);

      expect((await gantry(['cluster', 'tag', 'edge-2'], { env })).code).toBe(0);
      const held = await gantry(['cluster', 'tag', 'edge-1', '--tag', 'tier=core'], { env });
      expect(held.code).toBe(1);
      expect(held.stderr).toContain('held: this would delete 1 of the 1 services of global service hello (on edge-1)');
      expect((await gantry(['cluster', 'tag', 'edge-1', '--tag', 'tier=core', '--confirm'], { env })).code).toBe(0);
      expect((await gantry(['globalservice', 'get', 'hello'], { env })).stdout).toMatch(
        /^clusters:\s+edge-1 \(deleting\), edge-2 \(deleting\)$/m,
      );
    } finally {
      await repo.remove();
    }
  });

  test('a second start on the same data folder prints no new admin token', async () => {
    const second = startGantry(['server', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data')], { env });
    await second.waitForOutput('stdout', /"url":"http:\/\/127\.0\.0\.1:\d+"/);
    await second.stop();
    expect(second.output.stderr).not.toContain('gantry-api-');
    expect(second.output.stdout).not.toContain('gantry-api-');
  });
});
