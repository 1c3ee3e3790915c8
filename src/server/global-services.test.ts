/**
 * Global services over real HTTP on SQLite and PostgreSQL: copies follow cluster tags and selectors, and a change
 * that would delete more than half of one global service's copies is held until confirmed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';
import { testServerOptions } from '../../test/support/fleet.ts';

describe.each(DATABASE_KINDS)('global services on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  const { log } = capturedLogger('info');

  async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${server.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${server.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
  }

  /** cluster → status of the global service's live copies (deleting ones left out). */
  async function copies(): Promise<string[]> {
    const global = (await call('GET', '/v1/globalservices/web-tier')).body as { services: Array<{ cluster: string; deleting: boolean }> };
    return global.services
      .filter((s) => !s.deleting)
      .map((s) => s.cluster)
      .sort();
  }

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-global-test-'));
    repo = await createRepo({ 'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n' });
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }));
    await call('POST', '/v1/repositories', { url: repo.url });
    await call('POST', '/v1/clusters', { name: 'a', tags: { tier: 'web' } });
    await call('POST', '/v1/clusters', { name: 'b', tags: { tier: 'web' }, distro: 'k3s' });
    await call('POST', '/v1/clusters', { name: 'c', tags: { tier: 'db' } });
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('puts a copy on every cluster whose tags match, and on clusters added or tagged later', async () => {
    const created = await call('POST', '/v1/globalservices', {
      name: 'web-tier',
      tags: { tier: 'web' },
      template: {
        name: 'web',
        namespace: 'web',
        repository: repo.url,
        git: { ref: 'main', folder: 'web' },
        configuration: { token: 's3cret' },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.template.configuration).toEqual(['token']);
    expect(await copies()).toEqual(['a', 'b']);
    const copy = (await call('GET', '/v1/clusters/a/services/web')).body;
    expect(copy).toMatchObject({ status: 'stale', revision: { number: 1, createdBy: 'globalservice/web-tier' }, configuration: ['token'] });

    await call('POST', '/v1/clusters', { name: 'd', tags: { tier: 'web', region: 'eu' } });
    expect(await copies()).toEqual(['a', 'b', 'd']);
    expect((await call('PUT', '/v1/clusters/c/tags', { tags: { tier: 'web' } })).status).toBe(200);
    expect(await copies()).toEqual(['a', 'b', 'c', 'd']);
  });

  test('untagging a cluster removes its copy (its agent deletes the objects)', async () => {
    expect((await call('PUT', '/v1/clusters/c/tags', { tags: { tier: 'db' } })).status).toBe(200);
    expect(await copies()).toEqual(['a', 'b', 'd']);
    expect((await call('GET', '/v1/clusters/c/services/web')).body.deleting).toBe(true);
  });

  test('holds a selector change that would delete most copies, naming them, until confirmed', async () => {
    const held = await call('PATCH', '/v1/globalservices/web-tier', { distro: 'k3s' });
    expect(held.status).toBe(409);
    expect(held.body.message).toBe(
      'held: this would delete 2 of the 3 services of global service web-tier (on a, d), more than 50%; repeat with confirm=true to go ahead',
    );
    expect(await copies()).toEqual(['a', 'b', 'd']);
    expect((await call('PATCH', '/v1/globalservices/web-tier?confirm=true', { distro: 'k3s' })).status).toBe(200);
    expect(await copies()).toEqual(['b']);
  });

  test('holds the untagging of the last cluster and the deletion of the global service; detach forgets its copies', async () => {
    expect((await call('PUT', '/v1/clusters/b/tags', { tags: {} })).status).toBe(409);
    expect((await call('GET', '/v1/clusters/b')).body.tags).toEqual({ tier: 'web' });
    expect((await call('DELETE', '/v1/globalservices/web-tier')).status).toBe(409);
    expect((await call('DELETE', '/v1/globalservices/web-tier?detach=true')).status).toBe(204);
    expect((await call('GET', '/v1/clusters/b/services/web')).status).toBe(404);
    expect((await call('GET', '/v1/globalservices/web-tier')).status).toBe(404);
  });

  test('refuses a template whose source does not exist, naming the field', async () => {
    const bad = await call('POST', '/v1/globalservices', {
      name: 'bad',
      tags: { tier: 'web' },
      template: { name: 'x', namespace: 'x', repository: repo.url, git: { ref: 'main', folder: 'missing' } },
    });
    expect(bad).toMatchObject({ status: 400, body: { field: 'body.template.git.folder' } });
  });

  test("ignoreClusters (Plural's) leaves clusters out by handle, whatever their tags, and those registered later", async () => {
    const copiesOf = async (name: string) =>
      ((await call('GET', `/v1/globalservices/${name}`)).body as { services: Array<{ cluster: string }> }).services
        .map((s) => s.cluster)
        .sort();
    const template = { name: 'api', namespace: 'api', repository: repo.url, git: { ref: 'main', folder: 'web' } };
    const created = await call('POST', '/v1/globalservices', { name: 'api-tier', tags: { tier: 'web' }, ignoreClusters: ['d'], template });
    expect(created).toMatchObject({ status: 201, body: { ignoreClusters: ['d'] } });
    expect(await copiesOf('api-tier')).toEqual(['a', 'b']);
    expect((await call('PATCH', '/v1/globalservices/api-tier', { ignoreClusters: ['d', 'f'] })).status).toBe(200);
    await call('POST', '/v1/clusters', { name: 'f', tags: { tier: 'web' } });
    expect(await copiesOf('api-tier')).toEqual(['a', 'b']);
    expect((await call('PATCH', '/v1/globalservices/api-tier', { ignoreClusters: ['f', 'f'] })).status).toBe(400);
    // Dropping a handle from the list brings that cluster its copy.
    expect((await call('PATCH', '/v1/globalservices/api-tier', { ignoreClusters: ['d'] })).status).toBe(200);
    expect(await copiesOf('api-tier')).toEqual(['a', 'b', 'f']);
    expect((await call('DELETE', '/v1/globalservices/api-tier?detach=true&confirm=true')).status).toBe(204);
  });
});
