/**
 * Rights from the hostile user's side (issue 39 §4): each user is bound to one scope and tries the neighbouring
 * one (the other cluster, the other service, the other pipeline, the other repository) through a real server on
 * SQLite with a real git repository. Each refusal must be a 4xx with a JSON message naming what was refused.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';

const CONFIGMAP = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: "one"\n`;

describe('rights across scopes', () => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  const tokens: Record<string, string> = {};
  const { log } = capturedLogger('info');
  const service = (name: string) => ({
    name,
    namespace: name,
    repository: repo.url,
    git: { ref: 'main', folder: 'apps/web' },
    renderer: { kind: 'raw' },
  });

  /** A user bound to `role` within `scope`, and an API token acting as them. */
  async function userToken(name: string, role: string, scope: unknown): Promise<string> {
    expect((await apiCall(server, 'POST', '/v1/users', admin, { name, password: `${name}-password` })).status).toBe(201);
    const bound = await apiCall(server, 'PUT', `/v1/role-bindings/${name}`, admin, { role, subjects: [{ kind: 'user', name }], scope });
    expect(bound.status).toBe(200);
    const login = await fetch(`${server.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: name, password: `${name}-password` }),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const made = await fetch(`${server.url}/v1/me/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ name: `${name}-token` }),
    });
    expect(made.status).toBe(201);
    return ((await made.json()) as { token: string }).token;
  }

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-rights-test-'));
    repo = await createRepo({ 'apps/web/configmap.yaml': CONFIGMAP });
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }));
    admin = server.adminToken!;
    for (const name of ['dev', 'prod']) expect((await apiCall(server, 'POST', '/v1/clusters', admin, { name })).status).toBe(201);
    expect((await apiCall(server, 'POST', '/v1/repositories', admin, { url: repo.url })).body.health).toBe('PULLABLE');
    for (const cluster of ['dev', 'prod'])
      expect((await apiCall(server, 'POST', `/v1/clusters/${cluster}/services`, admin, service('web'))).status).toBe(201);
    tokens.byName = await userToken('byname', 'writer', { services: ['web', 'fresh'] });
    tokens.devWeb = await userToken('devweb', 'writer', { clusters: ['dev'], services: ['web', 'fresh'] });
    tokens.dev = await userToken('devall', 'writer', { clusters: ['dev'] });
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('a writer bound to a service name cannot create that service on a cluster: creating needs write on the cluster', async () => {
    const created = await apiCall(server, 'POST', '/v1/clusters/prod/services', tokens.byName!, service('fresh'));
    expect(created).toMatchObject({ status: 403, body: { message: expect.stringContaining('may not write service prod/fresh') } });
    expect((await apiCall(server, 'GET', '/v1/clusters/prod/services/fresh', admin)).status).toBe(404);
    // The existing service of that name stays theirs to change.
    expect((await apiCall(server, 'PATCH', '/v1/clusters/prod/services/web', tokens.byName!, { protect: false })).status).toBe(200);
  });

  test('cluster and service together are conjunctive: the service on the other cluster is refused', async () => {
    const patched = await apiCall(server, 'PATCH', '/v1/clusters/prod/services/web', tokens.devWeb!, { protect: false });
    expect(patched).toMatchObject({ status: 403, body: { message: expect.stringContaining('may not write service prod/web') } });
    expect(await apiCall(server, 'POST', '/v1/clusters/prod/services', tokens.devWeb!, service('fresh'))).toMatchObject({ status: 403 });
    expect((await apiCall(server, 'GET', '/v1/clusters/prod/services/web', tokens.devWeb!)).status).toBe(403);
    expect((await apiCall(server, 'GET', '/v1/services', tokens.devWeb!)).body.map((found: { cluster: string }) => found.cluster)).toEqual([
      'dev',
    ]);
    // Within the scope: the named service on the named cluster, created or changed; another name there is refused.
    expect((await apiCall(server, 'PATCH', '/v1/clusters/dev/services/web', tokens.devWeb!, { protect: false })).status).toBe(200);
    expect(await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devWeb!, service('other'))).toMatchObject({ status: 403 });
    expect((await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devWeb!, service('fresh'))).status).toBe(201);
    // A scope narrowed to services does not reach the whole cluster through the proxy.
    expect((await apiCall(server, 'GET', '/v1/clusters/dev/proxy/api/v1/namespaces', tokens.devWeb!)).status).toBe(403);
  });

  test('a writer bound to a cluster creates any service there and none on the other cluster', async () => {
    expect((await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.dev!, service('mine'))).status).toBe(201);
    expect(await apiCall(server, 'POST', '/v1/clusters/prod/services', tokens.dev!, service('mine'))).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('may not write service prod/mine') },
    });
  });
});
