/**
 * Two server replicas on one PostgreSQL database: an agent's push channel held by one replica gets the kicks of
 * changes made through the other (LISTEN/NOTIFY), also after PostgreSQL restarts; stopping one replica leaves the
 * other serving.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { postgresRestart } from '../../scripts/postgres/postgres.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/databases.ts';
import { testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { FleetClient } from '../client/fleet-client.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { SecretBox } from '../store/secret-box.ts';
import { type FleetServer, startFleetServer } from './server.ts';

describe('server replicas on PostgreSQL', () => {
  let database: TestDatabase;
  let dir: string;
  let repo: TestRepo;
  let first: FleetServer;
  let second: FleetServer;
  let socket: WebSocket;
  const kicks: string[] = [];
  let adminToken: string;
  let stopped = false;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-replicas-'));
    repo = await createRepo({ 'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n' });
    const box = new SecretBox(randomBytes(32));
    const options = (name: string) => testServerOptions({ databaseUrl: database.url, cacheDir: path.join(dir, name), log }, { box });
    first = await startFleetServer(options('first'));
    adminToken = first.adminToken!;
    second = await startFleetServer(options('second'));
    const client = new FleetClient({ server: second.url, token: adminToken });
    const { deployToken } = await client.createCluster({ name: 'dev' });
    await client.createRepository({ url: repo.url });
    socket = new WebSocket(`${first.url.replace('http:', 'ws:')}/v1/agent/socket`, { headers: { authorization: `Bearer ${deployToken}` } });
    socket.on('message', (data) => kicks.push((JSON.parse(String(data)) as { kick: string }).kick));
    await waitFor('the push channel on the first replica', () => first.channels.connected() === 1);
  });

  afterAll(async () => {
    socket?.close();
    if (!stopped) await first?.close();
    await second?.close();
    await repo?.remove();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a change made through one replica kicks the agent connected to the other, also after PostgreSQL restarts', async () => {
    const client = new FleetClient({ server: second.url, token: adminToken });
    const service = await client.createService('dev', {
      name: 'web',
      namespace: 'web',
      repository: repo.url,
      git: { ref: 'main', folder: 'web' },
    });
    await waitFor('the kick through PostgreSQL', () => kicks.includes(service.id));

    await postgresRestart();
    kicks.length = 0;
    // Until the listeners have reconnected, kicks are lost (the agent polls); keep changing until one arrives.
    await waitFor(
      'a kick after the restart',
      async () => {
        await client.updateService('dev', 'web', { configuration: { attempt: randomBytes(4).toString('hex') } }).catch(() => undefined);
        return kicks.includes(service.id);
      },
      30_000,
    );
  });

  test('with one replica stopped, the other keeps serving', async () => {
    await first.close();
    stopped = true;
    const client = new FleetClient({ server: second.url, token: adminToken });
    expect((await client.listServices('dev')).map((service) => service.name)).toEqual(['web']);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
  });
});
