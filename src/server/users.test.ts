/**
 * Users, sessions, role bindings and the audit log over real HTTP, on SQLite and PostgreSQL: logging in with the
 * first admin's printed password, cookies as a browser gets them, scoped writers and readers, tokens acting as a
 * user, and the record of who did what.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW_MS, verifyUserPassword } from '../store/users.ts';
import { type FleetServer, startFleetServer } from './server.ts';

const CONFIGMAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: one\n';

describe.each(DATABASE_KINDS)('users and rights on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  const { log, lines } = capturedLogger('info');

  /** A browser's call: the session cookie instead of a token. */
  async function browserCall(method: string, url: string, cookie: string | undefined, body?: unknown) {
    const response = await fetch(`${server.url}${url}`, {
      method,
      headers: { ...(cookie ? { cookie } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, setCookie: response.headers.get('set-cookie'), body: text ? JSON.parse(text) : undefined };
  }

  async function logIn(username: string, password: string): Promise<string> {
    const response = await browserCall('POST', '/v1/login', undefined, { username, password });
    expect(response.status).toBe(200);
    return response.setCookie!.split(';')[0]!;
  }

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-users-test-'));
    repo = await createRepo({ 'apps/web/configmap.yaml': CONFIGMAP });
    server = await startFleetServer(
      testServerOptions({ databaseUrl: database.url, cacheDir, log }, { gitPollIntervalMs: 60_000, trustProxy: '127.0.0.1' }),
    );
    admin = server.adminToken!;
    await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'dev', tags: { env: 'dev' } });
    await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'prod', tags: { env: 'prod' } });
    await apiCall(server, 'POST', '/v1/repositories', admin, { url: repo.url });
    for (const cluster of ['dev', 'prod']) {
      const created = await apiCall(server, 'POST', `/v1/clusters/${cluster}/services`, admin, {
        name: 'web',
        namespace: 'web',
        repository: repo.url,
        git: { ref: 'main', folder: 'apps/web' },
        renderer: { kind: 'raw' },
      });
      expect(created.status).toBe(201);
    }
    expect(
      (await apiCall(server, 'POST', '/v1/users', admin, { name: 'dana', password: 'dana-password', groups: ['dev-team'] })).status,
    ).toBe(201);
    expect((await apiCall(server, 'POST', '/v1/users', admin, { name: 'rick', password: 'rick-password' })).status).toBe(201);
    const bind = (name: string, body: object) => apiCall(server, 'PUT', `/v1/role-bindings/${name}`, admin, body);
    expect(
      (
        await bind('dev-writers', {
          role: 'writer',
          subjects: [{ kind: 'group', name: 'dev-team' }],
          scope: { clusterTags: { env: 'dev' } },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await bind('readers', {
          role: 'reader',
          subjects: [
            { kind: 'user', name: 'rick' },
            { kind: 'group', name: 'dev-team' },
          ],
          scope: 'all',
        })
      ).status,
    ).toBe(200);
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('the first admin logs in with the password made at first start; the cookie is HttpOnly and SameSite=Strict', async () => {
    expect(server.adminPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const response = await browserCall('POST', '/v1/login', undefined, { username: 'admin', password: server.adminPassword });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ kind: 'user', name: 'admin', groups: [], grants: [{ role: 'admin', scope: 'all' }] });
    expect(response.setCookie).toMatch(/^gantry_session=gantry-session-[A-Za-z0-9_-]{43};/);
    expect(response.setCookie).toMatch(/HttpOnly/);
    expect(response.setCookie).toMatch(/SameSite=Strict/);
    const cookie = response.setCookie!.split(';')[0]!;
    expect((await browserCall('GET', '/v1/clusters', cookie)).body.map((cluster: { name: string }) => cluster.name)).toEqual([
      'dev',
      'prod',
    ]);
  });

  test('behind a trusted proxy terminating TLS, the session cookie is Secure; over plain http it is not', async () => {
    const login = (headers: Record<string, string>) =>
      fetch(`${server.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ username: 'rick', password: 'rick-password' }),
      });
    expect((await login({ 'x-forwarded-proto': 'https' })).headers.get('set-cookie')).toMatch(/; Secure/);
    expect((await login({})).headers.get('set-cookie')).not.toMatch(/; Secure/);
  });

  test('a wrong password or an unknown user is a 401 that does not say which; passwords are stored as argon2id only', async () => {
    for (const [username, password] of [
      ['dana', 'not-her-password'],
      ['nobody', 'whatever-password'],
    ]) {
      expect(await browserCall('POST', '/v1/login', undefined, { username, password })).toMatchObject({
        status: 401,
        setCookie: null,
        body: { message: 'wrong username or password' },
      });
    }
    const rows = await server.store.db.selectFrom('users').select(['name', 'password_hash']).execute();
    for (const row of rows) expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(JSON.stringify(rows)).not.toContain('dana-password');
  });

  test('five wrong passwords lock the user for five minutes (429, Retry-After), even for the right one; then it works', async () => {
    await apiCall(server, 'POST', '/v1/users', admin, { name: 'locky', password: 'locky-password' });
    for (let attempt = 0; attempt < 5; attempt++)
      expect((await browserCall('POST', '/v1/login', undefined, { username: 'locky', password: 'guess-guess' })).status).toBe(401);
    const locked = await fetch(`${server.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'locky', password: 'locky-password' }),
    });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(290);
    expect(((await locked.json()) as { message: string }).message).toMatch(/^too many wrong passwords for locky: try again after /);
    const later = new Date(Date.now() + LOGIN_FAILURE_WINDOW_MS + 1_000);
    expect(await verifyUserPassword(server.store.db, 'locky', 'locky-password', later)).toMatchObject({ name: 'locky' });
    // The right password reset the count: one more wrong one locks nothing.
    expect((await browserCall('POST', '/v1/login', undefined, { username: 'locky', password: 'guess-guess' })).status).toBe(401);
    expect((await browserCall('POST', '/v1/login', undefined, { username: 'locky', password: 'locky-password' })).status).toBe(200);
  });

  test('20 wrong passwords sent at once lock the user exactly as 20 sent one after another do', async () => {
    const attempt = (username: string, address: string) =>
      fetch(`${server.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ username, password: 'wrong-guess' }),
      }).then((response) => response.status);
    const count = (statuses: number[]) => ({
      401: statuses.filter((s) => s === 401).length,
      429: statuses.filter((s) => s === 429).length,
    });
    await apiCall(server, 'POST', '/v1/users', admin, { name: 'serial', password: 'serial-password' });
    await apiCall(server, 'POST', '/v1/users', admin, { name: 'parallel', password: 'parallel-password' });
    const serial: number[] = [];
    for (let index = 0; index < 20; index++) serial.push(await attempt('serial', '198.51.100.1'));
    const parallel = await Promise.all(Array.from({ length: 20 }, () => attempt('parallel', '198.51.100.2')));
    expect(count(serial)).toEqual({ 401: 5, 429: 15 });
    expect(count(parallel)).toEqual(count(serial));
    const rows = await server.store.db
      .selectFrom('users')
      .select(['name', 'failed_logins'])
      .where('name', 'in', ['serial', 'parallel'])
      .execute();
    expect(rows.map((row) => row.failed_logins)).toEqual([5, 5]);
  });

  test('one address guessing across many users is locked after 20 wrong passwords, counted atomically too', async () => {
    const attempt = (username: string, password: string, address: string) =>
      fetch(`${server.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ username, password }),
      });
    // Two wrong passwords for each of 13 names, unknown ones among them: never a user's limit, 26 from one address.
    const names = ['dana', 'rick', ...Array.from({ length: 11 }, (_, index) => `sprayed-${index}`)];
    const statuses = await Promise.all(
      names.flatMap((name) => [attempt(name, 'spray-guess', '203.0.113.7'), attempt(name, 'spray-guess', '203.0.113.7')]),
    ).then((responses) => responses.map((response) => response.status));
    expect(statuses.filter((status) => status === 401)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(6);
    const locked = await attempt('rick', 'rick-password', '203.0.113.7');
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(290);
    expect(((await locked.json()) as { message: string }).message).toMatch(
      /^too many wrong passwords from 203\.0\.113\.7: try again after /,
    );
    // Another address, and another /64 of IPv6, are not held; one IPv6 /64 is one address.
    expect((await attempt('rick', 'rick-password', '203.0.113.8')).status).toBe(200);
    for (let index = 0; index < 20; index++) await attempt(`v6-${index}`, 'spray-guess', `2001:db8:1:2::${index.toString(16)}`);
    expect((await attempt('rick', 'rick-password', '2001:db8:1:2:ffff::1')).status).toBe(429);
    expect((await attempt('rick', 'rick-password', '2001:db8:1:3::1')).status).toBe(200);
    // Neither the right passwords nor the lock counted against the users.
    const rows = await server.store.db.selectFrom('users').select('failed_logins').where('name', 'in', ['dana', 'rick']).execute();
    expect(rows.every((row) => row.failed_logins < LOGIN_FAILURE_LIMIT)).toBe(true);
  });

  test('a new password ends the other sessions of the user; an admin resetting it ends all of them', async () => {
    await apiCall(server, 'POST', '/v1/users', admin, { name: 'pat', password: 'pat-password' });
    const laptop = await logIn('pat', 'pat-password');
    const phone = await logIn('pat', 'pat-password');
    const change = (cookie: string, currentPassword: string, newPassword: string) =>
      browserCall('POST', '/v1/me/password', cookie, { currentPassword, newPassword });
    expect(await change(laptop, 'not-the-password', 'pat-new-password')).toMatchObject({
      status: 403,
      body: { message: 'the current password is wrong' },
    });
    expect((await browserCall('GET', '/v1/me', phone)).status).toBe(200);
    expect((await change(laptop, 'pat-password', 'pat-new-password')).status).toBe(204);
    expect(await browserCall('GET', '/v1/me', phone)).toMatchObject({
      status: 401,
      body: { message: expect.stringContaining('log in again') },
    });
    expect(await browserCall('GET', '/v1/me', laptop)).toMatchObject({ status: 200, body: { name: 'pat' } });
    expect((await browserCall('POST', '/v1/login', undefined, { username: 'pat', password: 'pat-password' })).status).toBe(401);
    const tablet = await logIn('pat', 'pat-new-password');
    expect((await apiCall(server, 'PATCH', '/v1/users/pat', admin, { password: 'pat-reset-password' })).status).toBe(200);
    for (const cookie of [laptop, tablet]) expect((await browserCall('GET', '/v1/me', cookie)).status).toBe(401);
    expect((await apiCall(server, 'PATCH', '/v1/users/pat', admin, { groups: ['ops'] })).status).toBe(200);
    const again = await logIn('pat', 'pat-reset-password');
    expect((await apiCall(server, 'PATCH', '/v1/users/pat', admin, { groups: [] })).status).toBe(200);
    // Groups alone are no new password: the session stays.
    expect((await browserCall('GET', '/v1/me', again)).status).toBe(200);
  });

  test('a cookie-authenticated change from another origin is a 403 with a JSON body; same-origin and bearer tokens work', async () => {
    const rick = await logIn('rick', 'rick-password');
    const post = (headers: Record<string, string>, credentials: Record<string, string> = { cookie: rick }) =>
      fetch(`${server.url}/v1/me/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...credentials, ...headers },
        body: JSON.stringify({ name: 'csrf-check' }),
      });
    const foreign: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { referer: 'https://evil.example/page' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of foreign) {
      const refused = await post(headers);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await refused.json()) as { message: string }).message).toMatch(/^cross-origin request refused: POST from /);
    }
    expect((await post({ origin: server.url, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect((await post({ referer: `${server.url}/services` })).status).toBe(201);
    // A TLS terminator the server was not told of: the page is https, the hop plain http, the host the same.
    expect((await post({ origin: server.url.replace('http:', 'https:') })).status).toBe(201);
    // Bearer tokens are no ambient credential: the CLI and scripts are not checked, whatever they send.
    const token = (await browserCall('POST', '/v1/me/tokens', rick, { name: 'scripts' })).body.token as string;
    expect((await post({ origin: 'https://elsewhere.example' }, { authorization: `Bearer ${token}` })).status).toBe(201);
    // Reads change nothing and are not checked; logging in from another origin is refused (login CSRF).
    expect((await fetch(`${server.url}/v1/me`, { headers: { cookie: rick, origin: 'https://evil.example' } })).status).toBe(200);
    const login = await fetch(`${server.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ username: 'rick', password: 'rick-password' }),
    });
    expect(login.status).toBe(403);
  });

  test('a writer bound by cluster tag rolls back and releases on dev and is refused on prod; the reader sees but never writes', async () => {
    const dana = await logIn('dana', 'dana-password');
    const rollback = (cluster: string, cookie: string) =>
      browserCall('POST', `/v1/clusters/${cluster}/services/web/rollback`, cookie, { revision: 1 });
    expect((await rollback('dev', dana)).status).toBe(200);
    expect(await rollback('prod', dana)).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('user dana (writer, reader) may not write service prod/web') },
    });
    const rick = await logIn('rick', 'rick-password');
    expect((await browserCall('GET', '/v1/services', rick)).body).toHaveLength(2);
    expect(await rollback('dev', rick)).toMatchObject({ status: 403 });
    expect(await browserCall('POST', '/v1/clusters', rick, { name: 'sneaky' })).toMatchObject({ status: 403 });
    // The rollback's pin: released by who may write the service, nobody else, nowhere else.
    const release = (cluster: string, cookie: string) => browserCall('POST', `/v1/clusters/${cluster}/services/web/release`, cookie);
    expect(await release('dev', rick)).toMatchObject({ status: 403 });
    expect(await release('prod', dana)).toMatchObject({ status: 403 });
    expect(await release('dev', dana)).toMatchObject({ status: 200, body: { pinned: null } });
  });

  test('a user bound only on dev sees only dev, its services and no prod', async () => {
    await apiCall(server, 'POST', '/v1/users', admin, { name: 'devonly', password: 'devonly-password' });
    await apiCall(server, 'PUT', '/v1/role-bindings/devonly', admin, {
      role: 'reader',
      subjects: [{ kind: 'user', name: 'devonly' }],
      scope: { clusters: ['dev'] },
    });
    const cookie = await logIn('devonly', 'devonly-password');
    expect((await browserCall('GET', '/v1/clusters', cookie)).body.map((cluster: { name: string }) => cluster.name)).toEqual(['dev']);
    expect((await browserCall('GET', '/v1/services', cookie)).body.map((service: { cluster: string }) => service.cluster)).toEqual(['dev']);
    expect((await browserCall('GET', '/v1/clusters/prod/services/web', cookie)).status).toBe(403);
    expect((await browserCall('GET', '/v1/clusters/prod', cookie)).status).toBe(403);
  });

  test('the access review answers each check as the routes would decide it', async () => {
    const dana = await logIn('dana', 'dana-password');
    const services = (await apiCall(server, 'GET', '/v1/services', admin)).body as { id: string; cluster: string }[];
    const id = (cluster: string) => services.find((service) => service.cluster === cluster)!.id;
    const review = await browserCall('POST', '/v1/access-review', dana, {
      checks: [
        { action: 'write', service: id('dev') },
        { action: 'write', service: id('prod') },
        { action: 'read', cluster: 'prod' },
        { action: 'proxy', cluster: 'dev' },
        { action: 'approve', pipeline: 'release' },
        { action: 'administer' },
        { action: 'read', cluster: 'no-such-cluster' },
      ],
    });
    expect(review).toMatchObject({ status: 200, body: { allowed: [true, false, true, true, false, false, false] } });
  });

  test('a token a user makes acts as that user; logging out or deleting the user ends access', async () => {
    const dana = await logIn('dana', 'dana-password');
    const made = await browserCall('POST', '/v1/me/tokens', dana, { name: 'laptop' });
    expect(made.status).toBe(201);
    expect(await apiCall(server, 'GET', '/v1/me', made.body.token)).toMatchObject({ status: 200, body: { kind: 'user', name: 'dana' } });
    expect((await apiCall(server, 'POST', '/v1/clusters/prod/services/web/rollback', made.body.token, { revision: 1 })).status).toBe(403);

    expect((await browserCall('POST', '/v1/logout', dana)).status).toBe(204);
    expect(await browserCall('GET', '/v1/me', dana)).toMatchObject({
      status: 401,
      body: { message: expect.stringContaining('log in again') },
    });

    const again = await logIn('dana', 'dana-password');
    expect((await apiCall(server, 'DELETE', '/v1/users/dana', admin)).status).toBe(204);
    expect((await browserCall('GET', '/v1/me', again)).status).toBe(401);
    expect((await apiCall(server, 'GET', '/v1/me', made.body.token)).status).toBe(401);
  });

  test('the audit log records who did what, refusals and failed logins included, and never a password', async () => {
    type AuditEvent = { at: string; actor: string; action: string; target: string; status: number };
    // A request is audited once it has been answered (the server's onResponse hook): the last ones of the tests
    // above may not be recorded yet.
    const events = await waitFor('the deletion of dana audited', async () => {
      const found = (await apiCall(server, 'GET', '/v1/audit?limit=500', admin)).body as AuditEvent[];
      return found.some((event) => event.action === 'DELETE /v1/users/:name' && event.target === '/v1/users/dana') ? found : undefined;
    });
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          actor: 'user:dana',
          action: 'POST /v1/clusters/:cluster/services/:name/rollback',
          target: '/v1/clusters/dev/services/web/rollback',
          status: 200,
        }),
        expect.objectContaining({ actor: 'user:dana', target: '/v1/clusters/prod/services/web/rollback', status: 403 }),
        expect.objectContaining({ actor: 'user:nobody', action: 'POST /v1/login', status: 401 }),
        expect.objectContaining({ actor: 'token:admin', action: 'DELETE /v1/users/:name', target: '/v1/users/dana', status: 204 }),
      ]),
    );
    expect(events.every((event, index) => index === 0 || events[index - 1]!.at >= event.at)).toBe(true);
    // Routes may name a password (POST /v1/me/password); no value sent as one may appear.
    expect(JSON.stringify(events)).not.toMatch(/[a-z]-password|guess/);
    const rick = await logIn('rick', 'rick-password');
    expect((await browserCall('GET', '/v1/audit', rick)).status).toBe(403);
    expect(JSON.stringify(lines)).not.toMatch(/gantry-session-|dana-password/);
  });
});

describe('a server given its public URL', () => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-public-url-test-'));
    server = await startFleetServer(
      testServerOptions({ databaseUrl: database.url, cacheDir, log }, { publicUrl: new URL('https://gantry.example.test') }),
    );
  });

  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('https: session cookies are Secure on a plain hop, and changes come only from that origin', async () => {
    const login = await fetch(`${server.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: server.adminPassword }),
    });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/; Secure/);
    const cookie = setCookie.split(';')[0]!;
    const makeToken = (origin: string) =>
      fetch(`${server.url}/v1/me/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, origin },
        body: JSON.stringify({ name: 'from-the-ui' }),
      });
    // The address the request reached is not the origin browsers use: only the public URL's is.
    expect((await makeToken(server.url)).status).toBe(403);
    expect((await makeToken('http://gantry.example.test')).status).toBe(403);
    expect((await makeToken('https://gantry.example.test')).status).toBe(201);
  });
});
