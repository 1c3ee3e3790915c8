/**
 * The server on PostgreSQL survives a restart of the database: requests fail while it is down and succeed again,
 * with the data intact, once it is back, without restarting the server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { postgresRestart } from '../../scripts/postgres/postgres.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/databases.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';
import { testServerOptions } from '../../test/support/fleet.ts';

describe('fleet server on PostgreSQL', () => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  const { log } = capturedLogger('info');

  const get = (url: string) => fetch(`${server.url}${url}`, { headers: { authorization: `Bearer ${server.adminToken}` } });

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-pg-restart-'));
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }));
  });

  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('recovers after PostgreSQL restarts', async () => {
    const created = await fetch(`${server.url}/v1/clusters`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'before-restart' }),
    });
    expect(created.status).toBe(201);
    await postgresRestart();
    await waitFor('the API answering again', async () => (await get('/v1/clusters')).status === 200, 20_000);
    expect((await (await get('/v1/clusters/before-restart')).json()) as { name: string }).toMatchObject({ name: 'before-restart' });
    expect((await get('/readyz')).status).toBe(200);
  });
});
