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
import { apiCall, userToken as userTokenOf, testServerOptions } from '../../test/support/fleet.ts';
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

  const userToken = (name: string, role: string, scope: unknown) => userTokenOf(server, name, role, scope);

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
    // Bound to the repository too, so only the cluster and service decide in the tests of scopes.
    const repositories = [repo.url];
    tokens.byName = await userToken('byname', 'writer', { services: ['web', 'fresh'], repositories });
    tokens.devWeb = await userToken('devweb', 'writer', { clusters: ['dev'], services: ['web', 'fresh'], repositories });
    tokens.dev = await userToken('devall', 'writer', { clusters: ['dev'], repositories });
    tokens.devBare = await userToken('devbare', 'writer', { clusters: ['dev'] });
    tokens.devRepo = await userToken('devrepo', 'writer', { clusters: ['dev'], repositories: [repo.url, 'http://127.0.0.1:1/charts'] });
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

  test('a writer bound to a cluster cannot point a service at a repository or chart URL not bound to them', async () => {
    expect(await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devBare!, service('borrowed'))).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining(`may not use repository ${repo.url}`) },
    });
    const chart = { name: 'charted', namespace: 'charted', helm: { url: 'http://127.0.0.1:1/other', chart: 'c', version: '1.0.0' } };
    expect(await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devBare!, chart)).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('may not use chart URL http://127.0.0.1:1/other') },
    });
    // Changing what else a service holds keeps the repository an admin gave it.
    expect((await apiCall(server, 'PATCH', '/v1/clusters/dev/services/web', tokens.devBare!, { protect: false })).status).toBe(200);
    // Bound to the repository and the chart URL: allowed (the chart URL then fails to answer, a 400 of its own).
    expect((await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devRepo!, service('borrowed'))).status).toBe(201);
    const bound = await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devRepo!, {
      ...chart,
      helm: { ...chart.helm, url: 'http://127.0.0.1:1/charts' },
    });
    expect(bound).toMatchObject({ status: 400, body: { field: 'body.helm.url' } });
    expect(bound.body.message).not.toContain('special address');
  });

  test("an extra source's repository needs a right of its own, on create and on update", async () => {
    const other = await createRepo({ 'base/configmap.yaml': CONFIGMAP.replace('name: web', 'name: base') });
    try {
      expect((await apiCall(server, 'POST', '/v1/repositories', admin, { url: other.url })).status).toBe(201);
      const multi = {
        ...service('multi'),
        sources: [{ path: 'base', repository: other.url, git: { ref: 'main', folder: 'base' } }],
        renderer: undefined,
        renderers: [
          { path: '.', kind: 'raw' },
          { path: 'base', kind: 'raw' },
        ],
      };
      // Bound to the service's own repository only: the neighbouring one is refused, on create and on update.
      expect(await apiCall(server, 'POST', '/v1/clusters/dev/services', tokens.devRepo!, multi)).toMatchObject({
        status: 403,
        body: { message: expect.stringContaining(`may not use repository ${other.url}`) },
      });
      const sneaked = await apiCall(server, 'PATCH', '/v1/clusters/dev/services/web', tokens.devRepo!, {
        sources: multi.sources,
        renderer: { kind: 'auto' },
        renderers: multi.renderers,
      });
      expect(sneaked).toMatchObject({ status: 403, body: { message: expect.stringContaining(`may not use repository ${other.url}`) } });
      expect((await apiCall(server, 'GET', '/v1/clusters/dev/services/web', admin)).body.sources).toBeUndefined();
      // An admin's extra source stays when the writer changes something else.
      expect((await apiCall(server, 'POST', '/v1/clusters/dev/services', admin, multi)).status).toBe(201);
      expect((await apiCall(server, 'PATCH', '/v1/clusters/dev/services/multi', tokens.devRepo!, { protect: false })).status).toBe(200);
      // A repository in use as an extra source is not forgotten.
      expect((await apiCall(server, 'DELETE', `/v1/repositories/${encodeURIComponent(other.url)}`, admin)).status).toBe(409);
      expect((await apiCall(server, 'DELETE', '/v1/clusters/dev/services/multi?detach=true', admin)).status).toBe(204);
      expect((await apiCall(server, 'DELETE', `/v1/repositories/${encodeURIComponent(other.url)}`, admin)).status).toBe(204);
    } finally {
      await other.remove();
    }
  });

  test('readers see pipelines, their promotions and global services only within their scope (403 outside, as services)', async () => {
    const stages = (name: string) => ({
      stages: [
        { name: 'dev', services: [{ cluster: 'dev', name: 'web' }] },
        { name: 'prod', services: [{ cluster: 'prod', name: 'web', criteria: { cluster: 'dev', name: 'web', secrets: [] } }] },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: `${name}-gate`, type: 'APPROVAL' }] }],
    });
    for (const name of ['release', 'hotfix'])
      expect((await apiCall(server, 'PUT', `/v1/pipelines/${name}`, admin, stages(name))).status).toBe(200);
    const global = await apiCall(server, 'POST', '/v1/globalservices', admin, {
      name: 'everywhere',
      tags: {},
      template: { ...service('everywhere'), repository: repo.url },
    });
    expect(global.status).toBe(201);
    const devReader = await userToken('devreader', 'reader', { clusters: ['dev'] });
    const releaseReader = await userToken('releasereader', 'reader', { pipelines: ['release'] });
    const otherReader = await userToken('otherreader', 'reader', { clusters: ['prod'], services: ['other'] });

    expect((await apiCall(server, 'GET', '/v1/pipelines', devReader)).body).toEqual([]);
    for (const url of ['/v1/pipelines/release', '/v1/pipelines/release/promotions'])
      expect(await apiCall(server, 'GET', url, devReader)).toMatchObject({
        status: 403,
        body: { message: expect.stringContaining('may not read pipeline release') },
      });
    expect((await apiCall(server, 'GET', '/v1/pipelines', releaseReader)).body.map((found: { name: string }) => found.name)).toEqual([
      'release',
    ]);
    expect((await apiCall(server, 'GET', '/v1/pipelines/release/promotions', releaseReader)).status).toBe(200);
    expect(await apiCall(server, 'GET', '/v1/pipelines/hotfix', releaseReader)).toMatchObject({ status: 403 });

    // A global service shows only the copies in scope, and is hidden where none is.
    const listed = (await apiCall(server, 'GET', '/v1/globalservices', devReader)).body;
    expect(
      listed.map((found: { name: string; services: { cluster: string }[] }) => [found.name, found.services.map((copy) => copy.cluster)]),
    ).toEqual([['everywhere', ['dev']]]);
    expect((await apiCall(server, 'GET', '/v1/globalservices', otherReader)).body).toEqual([]);
    expect((await apiCall(server, 'GET', '/v1/globalservices', releaseReader)).body).toEqual([]);
    expect(await apiCall(server, 'GET', '/v1/globalservices/everywhere', otherReader)).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('may not read global service everywhere') },
    });
    expect((await apiCall(server, 'GET', '/v1/globalservices/everywhere', admin)).body.services).toHaveLength(2);
  });
});

describe('server-side fetches without an allow-list', () => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-outbound-test-'));
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }, { outboundAllow: [] }));
    expect((await apiCall(server, 'POST', '/v1/clusters', server.adminToken!, { name: 'dev' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test.each([
    ['http://127.0.0.1:8080/charts', '127.0.0.1'],
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['http://[fe80::1]/charts', 'fe80::1'],
    ['http://[::ffff:127.0.0.1]/charts', '::ffff:7f00:1'],
    ['http://localhost:8080/charts', 'localhost resolves to'],
  ])(
    'helm.url %s is refused with a 400 naming the address, even for an admin',
    async (url, named) => {
      const helm = { url, chart: 'c', version: '1.0.0' };
      const created = await apiCall(server, 'POST', '/v1/clusters/dev/services', server.adminToken!, {
        name: 'probe',
        namespace: 'p',
        helm,
      });
      expect(created).toMatchObject({ status: 400, body: { field: 'body.helm.url', message: expect.stringContaining('special address') } });
      expect(created.body.message).toContain(named);
      const global = await apiCall(server, 'POST', '/v1/globalservices', server.adminToken!, {
        name: 'probe',
        tags: {},
        template: { name: 'probe', namespace: 'p', helm },
      });
      expect(global).toMatchObject({ status: 400, body: { field: 'body.template.helm.url', message: expect.stringContaining(named) } });
    },
    60_000,
  );

  test.each([
    ['http://127.0.0.1:8080/r.git', '127.0.0.1'],
    ['https://localhost/r.git', 'localhost resolves to'],
    ['ssh://git@[::1]/r.git', '::1'],
    ['git@169.254.169.254:org/r.git', '169.254.169.254'],
  ])('a git repository at %s is refused with a 400 naming the address, even for an admin', async (url, named) => {
    const created = await apiCall(server, 'POST', '/v1/repositories', server.adminToken!, { url });
    expect(created).toMatchObject({ status: 400, body: { field: 'body.url', message: expect.stringContaining('special address') } });
    expect(created.body.message).toContain(named);
    expect((await apiCall(server, 'GET', '/v1/repositories', server.adminToken!)).body).toEqual([]);
  });
});
