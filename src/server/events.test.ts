/**
 * GET /v1/events over real HTTP: a browser's event stream hears the fleet's changes, on PostgreSQL also those a
 * request to another replica of the same database made.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions, userToken } from '../../test/support/fleet.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import type { FleetChange } from '../api/events.ts';
import { type FleetServer, startFleetServer } from './server.ts';

describe.each(DATABASE_KINDS)('fleet events on %s', (kind) => {
  let database: TestDatabase;
  let cacheDir: string;
  /** Where requests go; on PostgreSQL another replica than the one streaming events. */
  let acting: FleetServer;
  let streaming: FleetServer;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-events-test-'));
    const box = new SecretBox(randomBytes(32));
    const options = (name: string) => testServerOptions({ databaseUrl: database.url, cacheDir: path.join(cacheDir, name), log }, { box });
    acting = await startFleetServer(options('acting'));
    streaming = kind === 'postgres' ? await startFleetServer(options('streaming')) : acting;
  });

  afterAll(async () => {
    if (streaming !== acting) await streaming?.close();
    await acting?.close();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  /** Reads `count` events from the stream, then closes it. */
  async function nextEvents(count: number, act: () => Promise<void>, token = acting.adminToken!): Promise<FleetChange[]> {
    const abort = new AbortController();
    const response = await fetch(`${streaming.url}/v1/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const events: FleetChange[] = [];
    let buffer = '';
    let acted = false;
    while (events.length < count) {
      const { value } = await reader.read();
      buffer += value ?? '';
      // The first comment says the stream is subscribed: act only then.
      if (!acted && buffer.includes(': connected')) {
        acted = true;
        await act();
      }
      for (const match of buffer.matchAll(/^data: (.*)$/gm)) events.push(JSON.parse(match[1]!) as FleetChange);
      buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2);
    }
    abort.abort();
    return events;
  }

  test('a cluster registered and tagged on any replica reaches the stream', async () => {
    let id = '';
    const events = await nextEvents(2, async () => {
      id = (await apiCall(acting, 'POST', '/v1/clusters', acting.adminToken!, { name: 'web' })).body.cluster.id;
      await apiCall(acting, 'PUT', '/v1/clusters/web/tags', acting.adminToken!, { tags: { env: 'dev' } });
    });
    expect(events).toEqual([
      { kind: 'cluster', id },
      { kind: 'cluster', id },
    ]);
  });

  test('a reader bound within a scope hears only of the clusters and services it covers', async () => {
    const token = await userToken(acting, 'scoped-reader', 'reader', { clusters: ['inside'] });
    const admin = acting.adminToken!;
    const ids: Record<string, string> = {};
    const events = await nextEvents(
      2,
      async () => {
        for (const name of ['outside', 'inside']) {
          ids[name] = (await apiCall(acting, 'POST', '/v1/clusters', admin, { name })).body.cluster.id;
          await apiCall(acting, 'PUT', `/v1/clusters/${name}/tags`, admin, { tags: { env: name } });
        }
      },
      token,
    );
    expect(events).toEqual([
      { kind: 'cluster', id: ids['inside'] },
      { kind: 'cluster', id: ids['inside'] },
    ]);
  });

  test('the stream needs a user', async () => {
    expect((await fetch(`${streaming.url}/v1/events`)).status).toBe(401);
  });
});
