/**
 * Two server replicas on one PostgreSQL database: an agent's push channel held by one replica gets the kicks of
 * changes made through the other (LISTEN/NOTIFY), also after PostgreSQL restarts; git repositories are split
 * between the replicas and a stopped replica's share is fetched by the other; stopping one replica leaves the other
 * serving.
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
import { recordHeartbeat } from '../store/replicas.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { type FleetServer, startFleetServer } from './server.ts';

describe('server replicas on PostgreSQL', () => {
  let database: TestDatabase;
  let dir: string;
  let repo: TestRepo;
  // Unreachable on purpose: every fetch of one is logged, so the logs show which replica polls it.
  const unreachable = Array.from({ length: 6 }, (_, index) => `file:///nonexistent/gantry-replicas-${index}`);
  let first: FleetServer;
  let second: FleetServer;
  let socket: WebSocket;
  const kicks: string[] = [];
  let adminToken: string;
  let stopped = false;
  const logs = { first: capturedLogger('info'), second: capturedLogger('info') };

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-replicas-'));
    repo = await createRepo({ 'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n' });
    const box = new SecretBox(randomBytes(32));
    const options = (name: 'first' | 'second') =>
      testServerOptions(
        { databaseUrl: database.url, cacheDir: path.join(dir, name), log: logs[name].log },
        { box, gitPollIntervalMs: 300, heartbeatIntervalMs: 200 },
      );
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

  test("a global service's copies on many clusters kick every agent once, through the other replica, in packed messages", async () => {
    const client = new FleetClient({ server: second.url, token: adminToken });
    // More kicks than one NOTIFY payload holds (8,000 bytes): the bus packs them into several messages.
    const clusters = Array.from({ length: 120 }, (_, index) => `many-${index}`);
    const received = new Map<string, string[]>();
    const sockets: WebSocket[] = [];
    try {
      for (const name of clusters) {
        const { deployToken } = await client.createCluster({ name, tags: { group: 'many' } });
        const agent = new WebSocket(`${first.url.replace('http:', 'ws:')}/v1/agent/socket`, {
          headers: { authorization: `Bearer ${deployToken}` },
        });
        agent.on('message', (data) =>
          received.set(name, [...(received.get(name) ?? []), (JSON.parse(String(data)) as { kick: string }).kick]),
        );
        sockets.push(agent);
      }
      await waitFor('every push channel on the first replica', () => first.channels.connected() === clusters.length + 1);
      await client.createGlobalService({
        name: 'many',
        tags: { group: 'many' },
        template: { name: 'many', namespace: 'many', repository: repo.url, git: { ref: 'main', folder: 'web' } },
      });
      await waitFor('a kick on every cluster', () => clusters.every((name) => received.has(name)), 30_000);
      const copies = await client.listServices();
      for (const name of clusters) {
        const copy = copies.find((service) => service.cluster === name && service.name === 'many');
        expect(new Set(received.get(name))).toEqual(new Set([copy!.id]));
      }
      const logged = JSON.stringify([logs.first.lines, logs.second.lines]);
      expect(logged).not.toContain('kicks not sent');
      expect(logged).not.toContain('malformed kick');
    } finally {
      for (const agent of sockets) agent.close();
    }
  });

  test('each git repository is fetched on the interval by one live replica', async () => {
    const client = new FleetClient({ server: first.url, token: adminToken });
    for (const url of unreachable) await client.createRepository({ url });
    // A replica that crashed stops beating and never removes itself: it owns nothing once its beat is old.
    await recordHeartbeat(first.store.db, { id: 'crashed', url: 'http://127.0.0.1:1' }, new Date(Date.now() - 60_000));
    const replicas = await client.listReplicas();
    expect(replicas.map((replica) => replica.id).sort()).toEqual([first.replicas.id, second.replicas.id].sort());
    expect(replicas.flatMap((replica) => replica.repositories).sort()).toEqual([repo.url, ...unreachable].sort());

    // The URLs of the failed fetches each replica logged since the mark, one entry per fetch.
    const fetchedBy = (name: 'first' | 'second', from: number) =>
      logs[name].lines
        .slice(from)
        .flatMap((line) => (line['msg'] === 'git repository cannot be fetched' ? [String(line['repository'])] : []));
    const marks = { first: logs.first.lines.length, second: logs.second.lines.length };
    // Three rounds of every repository: a replica polling what it does not own would have shown by then.
    await waitFor('three poll rounds', () => {
      const all = [...fetchedBy('first', marks.first), ...fetchedBy('second', marks.second)];
      return unreachable.every((url) => all.filter((fetched) => fetched === url).length >= 3);
    });
    for (const name of ['first', 'second'] as const) {
      const owned = replicas.find((replica) => replica.id === server(name).replicas.id)!.repositories;
      expect([...new Set(fetchedBy(name, marks[name]))].sort()).toEqual(owned.filter((url) => unreachable.includes(url)).sort());
    }
  });

  const server = (name: 'first' | 'second') => (name === 'first' ? first : second);

  test('with one replica stopped, the other keeps serving and fetches its repositories too', async () => {
    const client = new FleetClient({ server: second.url, token: adminToken });
    await first.close();
    stopped = true;
    expect((await client.listReplicas()).map((replica) => replica.id)).toEqual([second.replicas.id]);
    expect((await client.listServices('dev')).map((service) => service.name)).toEqual(['web']);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    const stoppedAt = new Date().toISOString();
    await waitFor('every repository fetched by the replica left', async () =>
      (await client.listRepositories()).every((repository) => (repository.pulledAt ?? '') > stoppedAt),
    );
  });
});
