/**
 * Service contexts and the services binding them, over real HTTP on SQLite and PostgreSQL, with a real git
 * repository as the services' source: CRUD, who may write, unknown names, revisions on context updates, what the
 * agent gets, and deletion refused while bound.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { createApiToken } from '../store/api-tokens.ts';
import { type FleetServer, startFleetServer } from './server.ts';

describe.each(DATABASE_KINDS)('service contexts on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  let reader: string;
  let deployToken: string;
  const { log } = capturedLogger('info');

  const call = (method: string, url: string, token: string, body?: unknown) => apiCall(server, method, url, token, body);

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-contexts-test-'));
    repo = await createRepo({ 'web/configmap.yaml.liquid': 'kind: ConfigMap\n' });
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }));
    admin = server.adminToken!;
    reader = await createApiToken(server.store.db, 'viewer', 'reader');
    deployToken = (await call('POST', '/v1/clusters', admin, { name: 'dev', tags: { tier: 'web' } })).body.deployToken;
    expect((await call('POST', '/v1/repositories', admin, { url: repo.url })).body.health).toBe('PULLABLE');
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  const network = { vpc: 'vpc-1', subnets: ['a', 'b'], nested: { zones: 3 } };

  test('sets, reads and lists contexts; readers read, only admins write; bad input names the field', async () => {
    const created = await call('PUT', '/v1/contexts/network', admin, { configuration: network });
    expect(created).toMatchObject({ status: 201, body: { name: 'network', configuration: network, boundBy: [] } });
    const again = await call('PUT', '/v1/contexts/network', admin, { configuration: network });
    expect(again).toMatchObject({ status: 200, body: { updatedAt: created.body.updatedAt } });

    expect(await call('GET', '/v1/contexts/network', reader)).toMatchObject({ status: 200, body: { configuration: network } });
    expect((await call('GET', '/v1/contexts', reader)).body.map((c: { name: string }) => c.name)).toEqual(['network']);
    expect((await call('GET', '/v1/contexts/nothing', reader)).status).toBe(404);
    expect((await call('PUT', '/v1/contexts/network', reader, { configuration: {} })).status).toBe(403);
    expect((await call('DELETE', '/v1/contexts/network', reader)).status).toBe(403);

    expect(await call('PUT', '/v1/contexts/Bad.Name', admin, { configuration: {} })).toMatchObject({
      status: 400,
      body: { field: 'params.name' },
    });
    expect(await call('PUT', '/v1/contexts/other', admin, { configuration: 'flat' })).toMatchObject({
      status: 400,
      body: { field: 'body.configuration' },
    });
    expect(await call('PUT', '/v1/contexts/other', admin, { configuration: {}, extra: 1 })).toMatchObject({
      status: 400,
      body: { field: 'body.extra' },
    });

    const openapi = await call('GET', '/v1/openapi.json', admin);
    expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/v1/contexts', '/v1/contexts/{name}']));
  });

  test('a service binds contexts by name; an unknown one is a 400 naming its place; the agent gets cluster and contexts', async () => {
    const web = { name: 'web', namespace: 'web', repository: repo.url, git: { ref: 'main', folder: 'web' }, renderer: { kind: 'raw' } };
    expect(await call('POST', '/v1/clusters/dev/services', admin, { ...web, contexts: ['network', 'nowhere'] })).toMatchObject({
      status: 400,
      body: { field: 'body.contexts.1', message: expect.stringContaining('nowhere') },
    });
    const created = await call('POST', '/v1/clusters/dev/services', admin, { ...web, contexts: ['network'], configuration: { a: 'b' } });
    expect(created).toMatchObject({ status: 201, body: { contexts: ['network'], revision: { number: 1, contexts: ['network'] } } });
    expect((await call('PATCH', '/v1/clusters/dev/services/web', admin, { contexts: ['nowhere'] })).body.field).toBe('body.contexts.0');

    const [agentService] = (await call('GET', '/v1/agent/services', deployToken)).body;
    expect(agentService).toMatchObject({
      name: 'web',
      namespace: 'web',
      configuration: { a: 'b' },
      cluster: { name: 'dev', handle: 'dev', tags: { tier: 'web' }, distro: null, version: null },
      contexts: { network },
    });
    expect((await call('GET', '/v1/contexts/network', reader)).body.boundBy).toEqual(['dev/web']);
  });

  test('updating a context adds a revision to each bound service; an identical update and unbound services get none', async () => {
    await call('POST', '/v1/clusters/dev/services', admin, {
      name: 'unbound',
      namespace: 'web',
      repository: repo.url,
      git: { ref: 'main', folder: 'web' },
    });
    const changed = { ...network, vpc: 'vpc-2' };
    expect((await call('PUT', '/v1/contexts/network', admin, { configuration: changed })).status).toBe(200);
    const revisions = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body;
    expect(revisions[0]).toMatchObject({ number: 2, message: 'context network updated', createdBy: 'admin', contexts: ['network'] });
    expect(revisions[0].digest).toBe(revisions[1].digest);
    expect((await call('GET', '/v1/clusters/dev/services/unbound', admin)).body.revision.number).toBe(1);
    const agentServices = (await call('GET', '/v1/agent/services', deployToken)).body as Array<{ name: string; contexts: object }>;
    expect(agentServices.map((service) => [service.name, service.contexts])).toEqual([
      ['unbound', {}],
      ['web', { network: changed }],
    ]);

    await call('PUT', '/v1/contexts/network', admin, { configuration: changed });
    expect((await call('GET', '/v1/clusters/dev/services/web', admin)).body.revision.number).toBe(2);

    const unbound = await call('PATCH', '/v1/clusters/dev/services/web', admin, { contexts: [] });
    expect(unbound.body).toMatchObject({ contexts: [], revision: { number: 3, contexts: [] } });
    expect((await call('PATCH', '/v1/clusters/dev/services/web', admin, { contexts: ['network'] })).body.revision.number).toBe(4);
  });

  test('a bound context cannot be deleted (409 naming what binds it), an unbound one can', async () => {
    const global = {
      name: 'shared',
      tags: { tier: 'none' },
      template: { name: 'shared', namespace: 'shared', repository: repo.url, git: { ref: 'main', folder: 'web' } },
    };
    expect(await call('POST', '/v1/globalservices', admin, { ...global, template: { ...global.template, contexts: ['x'] } })).toMatchObject(
      {
        status: 400,
        body: { field: 'body.template.contexts.0' },
      },
    );
    const created = await call('POST', '/v1/globalservices', admin, { ...global, template: { ...global.template, contexts: ['network'] } });
    expect(created).toMatchObject({ status: 201, body: { template: { contexts: ['network'] } } });

    const refused = await call('DELETE', '/v1/contexts/network', admin);
    expect(refused).toMatchObject({ status: 409, body: { field: 'params.name' } });
    expect(refused.body.message).toContain('service dev/web');
    expect(refused.body.message).toContain('globalservice shared');

    expect((await call('DELETE', '/v1/clusters/dev/services/web?detach=true', admin)).status).toBe(204);
    expect((await call('DELETE', '/v1/globalservices/shared', admin)).status).toBe(204);
    expect((await call('DELETE', '/v1/contexts/network', admin)).status).toBe(204);
    expect((await call('GET', '/v1/contexts/network', admin)).status).toBe(404);
    expect((await call('DELETE', '/v1/contexts/network', admin)).status).toBe(404);
  });
});
