/**
 * People and rights through the CLI, as an admin and a user would type it: users made with passwords on stdin, a
 * role binding by cluster tag, `gantry login --username` turning a password into a saved token, the user seeing
 * only their clusters, and the audit log listing what was done.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { gantry } from '../support/cli.ts';
import { testServerOptions } from '../support/fleet.ts';

describe('gantry user, rolebinding, login --username and audit', () => {
  let dir: string;
  let server: FleetServer;
  let admin: Record<string, string>;
  let dana: Record<string, string>;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-access-cli-'));
    server = await startFleetServer(
      testServerOptions({ databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log }),
    );
    admin = { XDG_CONFIG_HOME: path.join(dir, 'admin'), GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken! };
    dana = { XDG_CONFIG_HOME: path.join(dir, 'dana') };
    for (const [name, env] of [
      ['dev', 'dev'],
      ['prod', 'prod'],
    ])
      expect(await gantry(['cluster', 'create', name!, '--tag', `env=${env}`], { env: admin })).toMatchObject({ code: 0 });
  });

  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('an admin makes a user and binds their group as writers of the dev clusters', async () => {
    expect(await gantry(['user', 'create', 'dana', '--group', 'dev-team'], { env: admin, input: 'dana-password\n' })).toMatchObject({
      code: 0,
      stdout: 'user dana created\n',
    });
    expect(await gantry(['user', 'create', 'bob'], { env: admin, input: 'short\n' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('body.password must NOT have fewer than 8 characters'),
    });
    const set = await gantry(['rolebinding', 'set', 'dev-writers', '--role', 'writer', '--group', 'dev-team', '--cluster-tag', 'env=dev'], {
      env: admin,
    });
    expect(set).toMatchObject({ code: 0, stdout: 'role binding dev-writers set: writer on clusters tagged env=dev\n' });
    expect(await gantry(['rolebinding', 'set', 'x', '--role', 'owner', '--user', 'dana'], { env: admin })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("'owner' is not one of admin, writer, approver, reader"),
    });
    const listed = await gantry(['rolebinding', 'list'], { env: admin });
    expect(listed.stdout).toMatch(/^dev-writers\s+writer\s+group:dev-team\s+on clusters tagged env=dev$/m);
    expect(listed.stdout).toMatch(/^admin\s+admin\s+user:admin\s+everywhere$/m);
  });

  test('the user logs in with a password and sees only the dev cluster', async () => {
    const wrong = await gantry(['login', '--server', server.url, '--username', 'dana', '--password-stdin'], {
      env: dana,
      input: 'nope-nope\n',
    });
    expect(wrong).toMatchObject({ code: 1, stderr: expect.stringContaining('wrong username or password') });
    const login = await gantry(['login', '--server', server.url, '--username', 'dana', '--password-stdin'], {
      env: dana,
      input: 'dana-password\n',
    });
    expect(login).toMatchObject({ code: 0, stderr: expect.stringContaining('logged in to') });
    expect(login.stderr).toContain('as user dana');
    const clusters = JSON.parse((await gantry(['cluster', 'list', '-o', 'json'], { env: dana })).stdout) as Array<{ name: string }>;
    expect(clusters.map((cluster) => cluster.name)).toEqual(['dev']);
    expect(await gantry(['cluster', 'delete', 'dev'], { env: dana })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('user dana (writer) may not administer'),
    });
  });

  test('the audit log lists who did what, newest first', async () => {
    type AuditEvent = { actor: string; action: string; target: string; status: number };
    // A request is audited once it has been answered (the server's onResponse hook): wait for the last ones.
    const recorded = (found: AuditEvent[], actor: string, action: string, status: number) =>
      found.some((event) => event.actor === actor && event.action === action && event.status === status);
    const events = await waitFor(
      'the requests above audited',
      async () => {
        const found = JSON.parse((await gantry(['audit', '-o', 'json'], { env: admin })).stdout) as AuditEvent[];
        return recorded(found, 'user:dana', 'DELETE /v1/clusters/:name', 403) &&
          recorded(found, 'user:dana', 'POST /v1/login', 401) &&
          recorded(found, 'token:admin', 'PUT /v1/role-bindings/:name', 200)
          ? found
          : undefined;
      },
      30_000,
    );
    expect(events[0]).toMatchObject({ actor: 'user:dana', action: 'DELETE /v1/clusters/:name', status: 403 });
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ actor: 'user:dana', action: 'POST /v1/login', status: 401 }),
        expect.objectContaining({
          actor: 'token:admin',
          action: 'PUT /v1/role-bindings/:name',
          target: '/v1/role-bindings/dev-writers',
          status: 200,
        }),
      ]),
    );
    expect((await gantry(['audit'], { env: dana })).code).toBe(1);
  });

  test('the user changes their own password, giving the current one', async () => {
    expect(await gantry(['user', 'password'], { env: dana, input: 'wrong-password\nnew-dana-password\n' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('the current password is wrong'),
    });
    expect(await gantry(['user', 'password'], { env: dana, input: 'dana-password\n' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('the new one on the second'),
    });
    expect(await gantry(['user', 'password'], { env: dana, input: 'dana-password\nnew-dana-password\n' })).toMatchObject({
      code: 0,
      stdout: 'password changed; your other sessions have ended\n',
    });
    const login = (password: string) =>
      gantry(['login', '--server', server.url, '--username', 'dana', '--password-stdin'], { env: dana, input: `${password}\n` });
    expect(await login('dana-password')).toMatchObject({ code: 1, stderr: expect.stringContaining('wrong username or password') });
    expect(await login('new-dana-password')).toMatchObject({ code: 0 });
  });
});
