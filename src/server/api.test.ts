/**
 * The fleet API over real HTTP, on a real SQLite file and a real PostgreSQL database.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { type GitServer, startGitServer } from '../../test/support/git-server.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { createApiToken } from '../store/api-tokens.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { type FleetServer, type FleetServerOptions, startFleetServer } from './server.ts';

describe.each(DATABASE_KINDS)('fleet API on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let admin: string;
  const { log, lines } = capturedLogger('info');
  const box = new SecretBox(randomBytes(32));
  const options = (): FleetServerOptions => testServerOptions({ databaseUrl: database.url, cacheDir, log }, { box });
  let cacheDir: string;
  let repo: TestRepo;
  let gitServer: GitServer;

  async function call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
  }

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-api-test-cache-'));
    repo = await createRepo({ 'README.md': 'fleet\n' });
    gitServer = await startGitServer(path.dirname(repo.remote), { username: 'deployer', password: 's3cret-pw' });
    server = await startFleetServer(options());
    admin = server.adminToken!;
  });

  afterAll(async () => {
    await server?.close();
    await gitServer?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('makes an admin token at first start only', async () => {
    expect(admin).toMatch(/^gantry-api-/);
    const again = await startFleetServer(options());
    try {
      expect(again.adminToken).toBeUndefined();
      expect((await fetch(`${again.url}/v1/clusters`, { headers: { authorization: `Bearer ${admin}` } })).status).toBe(200);
    } finally {
      await again.close();
    }
  });

  test('on an empty database, a given admin token is the first one; a malformed one is refused', async () => {
    const empty = await createTestDatabase(kind);
    const given = `gantry-api-${randomBytes(32).toString('base64url')}`;
    const declared = await startFleetServer({ ...options(), databaseUrl: empty.url, adminToken: given });
    try {
      expect(declared.adminToken).toBe(given);
      expect((await fetch(`${declared.url}/v1/clusters`, { headers: { authorization: `Bearer ${given}` } })).status).toBe(200);
      expect((await fetch(`${declared.url}/v1/clusters`, { headers: { authorization: `Bearer ${admin}` } })).status).toBe(401);
    } finally {
      await declared.close();
      await empty.drop();
    }
    await expect(startFleetServer({ ...options(), adminToken: 'gantry-api-short' })).rejects.toThrow('the admin token must be gantry-api-');
  });

  test('creates, reads, tags and deletes clusters', async () => {
    const created = await call('POST', '/v1/clusters', admin, { name: 'dev', tags: { tier: 'web' } });
    expect(created.status).toBe(201);
    expect(created.body.cluster).toMatchObject({ name: 'dev', handle: 'dev', tags: { tier: 'web' }, pingedAt: null });
    expect(created.body.deployToken).toMatch(/^gantry-deploy-/);
    expect((await call('GET', '/v1/clusters/dev', admin)).body.name).toBe('dev');
    expect((await call('PUT', '/v1/clusters/dev/tags', admin, { tags: { tier: 'api' } })).body.tags).toEqual({ tier: 'api' });
    expect((await call('GET', '/v1/clusters', admin)).body.map((c: { name: string }) => c.name)).toContain('dev');
    expect((await call('DELETE', '/v1/clusters/dev', admin)).status).toBe(204);
    expect(await call('GET', '/v1/clusters/dev', admin)).toEqual({ status: 404, body: { message: 'cluster "dev" not found' } });
  });

  test('answers bad input with 400 naming the field, and a taken name with 409', async () => {
    expect(await call('POST', '/v1/clusters', admin, { name: 'Not_A_Label' })).toMatchObject({
      status: 400,
      body: { field: 'body.name', message: expect.stringContaining('body.name must match pattern') },
    });
    expect(await call('POST', '/v1/clusters', admin, { name: 'ok', colour: 'red' })).toMatchObject({
      status: 400,
      body: { field: 'body.colour' },
    });
    expect(await call('POST', '/v1/clusters', admin, {})).toMatchObject({ status: 400, body: { field: 'body.name' } });
    expect(await call('POST', '/v1/clusters', admin, { name: 'bad-tags', tags: { tier: 3 } })).toMatchObject({
      status: 400,
      body: { field: 'body.tags.tier' },
    });
    expect((await call('POST', '/v1/clusters', admin, { name: 'twice' })).status).toBe(201);
    expect(await call('POST', '/v1/clusters', admin, { name: 'twice' })).toEqual({
      status: 409,
      body: { message: 'a cluster with name "twice" already exists', field: 'body.name' },
    });
    expect(await call('GET', '/v1/nothing', admin)).toEqual({ status: 404, body: { message: 'no route GET /v1/nothing' } });
  });

  test('refuses missing, wrong and misplaced credentials, and readers writing', async () => {
    const { body } = await call('POST', '/v1/clusters', admin, { name: 'creds' });
    expect(await call('GET', '/v1/clusters')).toMatchObject({
      status: 401,
      body: { message: expect.stringContaining('missing credentials') },
    });
    expect((await call('GET', '/v1/clusters', 'gantry-api-wrong')).status).toBe(401);
    expect((await call('GET', '/v1/clusters', body.deployToken)).status).toBe(401);
    expect((await call('GET', '/v1/agent/cluster', admin)).status).toBe(401);
    const reader = await createApiToken(server.store.db, 'viewer', 'reader');
    expect((await call('GET', '/v1/clusters/creds', reader)).status).toBe(200);
    expect(await call('DELETE', '/v1/clusters/creds', reader)).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('(reader) may not administer') },
    });
  });

  test('an agent reads and pings only its own cluster; a revoked token stops working', async () => {
    const a = (await call('POST', '/v1/clusters', admin, { name: 'agent-a' })).body.deployToken as string;
    const b = (await call('POST', '/v1/clusters', admin, { name: 'agent-b' })).body.deployToken as string;
    expect((await call('GET', '/v1/agent/cluster', a)).body.name).toBe('agent-a');
    expect((await call('GET', '/v1/agent/cluster', b)).body.name).toBe('agent-b');
    const pinged = await call('POST', '/v1/agent/ping', a, { kubernetesVersion: '1.35.4', agentVersion: '0.1.0' });
    expect(pinged.body).toMatchObject({
      name: 'agent-a',
      kubernetesVersion: '1.35.4',
      agentVersion: '0.1.0',
      pingedAt: expect.any(String),
    });
    expect((await call('GET', '/v1/clusters/agent-b', admin)).body.pingedAt).toBeNull();
    expect(await call('POST', '/v1/agent/ping', a, { kubernetesVersion: '', agentVersion: '0.1.0' })).toMatchObject({
      status: 400,
      body: { field: 'body.kubernetesVersion' },
    });

    const rotated = await call('POST', '/v1/clusters/agent-a/token', admin, { revokeOthers: true });
    expect(rotated.status).toBe(201);
    expect((await call('GET', '/v1/agent/cluster', a)).status).toBe(401);
    expect((await call('GET', '/v1/agent/cluster', rotated.body.deployToken)).body.name).toBe('agent-a');
  });

  test('adds repositories, fetching each at once: PULLABLE with the right credentials, FAILED naming the error', async () => {
    const url = gitServer.url('remote.git');
    const good = await call('POST', '/v1/repositories', admin, { url, credentials: { username: 'deployer', password: 's3cret-pw' } });
    expect(good).toMatchObject({ status: 201, body: { url, auth: 'basic', health: 'PULLABLE', lastError: null } });
    expect(JSON.stringify(good.body)).not.toContain('s3cret-pw');

    const wrongUrl = `${gitServer.baseUrl}/other/remote.git`;
    const bad = await call('POST', '/v1/repositories', admin, {
      url: wrongUrl,
      credentials: { username: 'deployer', password: 'wrong-pw' },
    });
    expect(bad).toMatchObject({ status: 201, body: { health: 'FAILED', lastError: expect.stringContaining(wrongUrl) } });
    expect(bad.body.lastError).not.toContain('wrong-pw');

    expect((await call('GET', `/v1/repositories/${encodeURIComponent(url)}`, admin)).body.id).toBe(good.body.id);
    expect(await call('POST', '/v1/repositories', admin, { url })).toMatchObject({ status: 409, body: { field: 'body.url' } });
    expect(await call('POST', '/v1/repositories', admin, { url: 'not a url' })).toMatchObject({ status: 400, body: { field: 'body.url' } });
    expect(
      await call('POST', '/v1/repositories', admin, { url: 'ssh://git@example.com/x.git', credentials: { identity: 'KEY' } }),
    ).toMatchObject({
      status: 400,
      body: { field: 'body.credentials.known_hosts' },
    });
    expect((await call('DELETE', `/v1/repositories/${bad.body.id}`, admin)).status).toBe(204);
    expect((await call('GET', '/v1/repositories', admin)).body.map((r: { url: string }) => r.url)).toEqual([url]);
  });

  test('keeps repository credentials sealed in the database', async () => {
    const rows = await server.store.db.selectFrom('git_repositories').select(['url', 'credentials']).execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain('s3cret-pw');
    expect(rows.find((row) => row.credentials !== null)?.credentials).toMatch(/^v2\./);
  });

  test('serves its OpenAPI document, probes and metrics', async () => {
    const openapi = await call('GET', '/v1/openapi.json');
    expect(openapi.body.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/v1/clusters', '/v1/clusters/{name}', '/v1/agent/ping']));
    expect(openapi.body.paths['/v1/clusters'].post.requestBody.content['application/json'].schema.properties.name.pattern).toBeDefined();
    expect(await call('GET', '/readyz')).toEqual({ status: 200, body: 'ok' });
    const metrics = await call('GET', '/metrics');
    expect(metrics.body).toMatch(/gantry_server_requests_total\{method="POST",route="\/v1\/clusters",code="201"\} \d+/);
    const clusters = (await call('GET', '/v1/clusters', admin)).body as Array<{ pingedAt: string | null }>;
    const pinged = clusters.filter((cluster) => cluster.pingedAt !== null).length;
    expect(metrics.body).toContain(`gantry_fleet_clusters{pinged="true"} ${pinged}`);
    expect(metrics.body).toContain(`gantry_fleet_clusters{pinged="false"} ${clusters.length - pinged}`);
    expect(metrics.body).toMatch(/gantry_fleet_services\{status="healthy"\} 0/);
    expect(metrics.body).toContain('gantry_fleet_agent_channels 0');
  });

  test('never logs a token', () => {
    const logged = JSON.stringify(lines);
    expect(logged).toContain('/v1/clusters');
    expect(logged).not.toMatch(/gantry-(api|deploy)-[A-Za-z0-9_-]{20}/);
    expect(logged).not.toContain('s3cret-pw');
  });
});
