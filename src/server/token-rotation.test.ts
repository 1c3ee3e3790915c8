/**
 * Deploy token rotation through the API, driven as an agent (or someone holding a leaked token) would drive it: the
 * ping's answer, the new token only when one is due, the old token's overlap and end, push channels that end with
 * their token on this replica and on another, and the rights around it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { type FleetServer, startFleetServer } from './server.ts';
import { TOKEN_ENDED_CLOSE_CODE } from './push-channels.ts';
import { clusterForDeployToken } from '../store/clusters.ts';

const OVERLAP_MS = 1_500;
const PING = { kubernetesVersion: '1.35.4', agentVersion: '0.0.0-test' };

describe.each(DATABASE_KINDS)('deploy token rotation on %s', (kind) => {
  let database: TestDatabase;
  let dir: string;
  let first: FleetServer;
  let second: FleetServer;
  let admin: string;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-token-rotation-'));
    const box = new SecretBox(randomBytes(32));
    const options = (name: string) =>
      testServerOptions(
        { databaseUrl: database.url, cacheDir: path.join(dir, name), log },
        { box, deployTokens: { overlapMs: OVERLAP_MS, maxAgeMs: 0 } },
      );
    first = await startFleetServer(options('first'));
    admin = first.adminToken!;
    second = await startFleetServer(options('second'));
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const createCluster = async (name: string): Promise<string> => {
    const created = await apiCall(first, 'POST', '/v1/clusters', admin, { name });
    expect(created.status).toBe(201);
    return created.body.deployToken as string;
  };
  const ping = (token: string) => apiCall(first, 'POST', '/v1/agent/ping', token, PING);
  const newToken = (token: string) => apiCall(first, 'POST', '/v1/agent/token', token);
  const requestRotation = (cluster: string) => apiCall(first, 'POST', `/v1/clusters/${cluster}/token-rotation`, admin);
  const socketOf = async (server: FleetServer, token: string) => {
    const socket = new WebSocket(`${server.url.replace('http:', 'ws:')}/v1/agent/socket`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return { socket, closed };
  };

  test('an agent rotates when asked: new token, old one valid for the overlap only, the request then satisfied', async () => {
    const old = await createCluster('asked');
    expect((await ping(old)).body.rotateToken).toBe(false);
    const requested = await requestRotation('asked');
    expect(requested.status).toBe(200);
    expect(requested.body.tokenRotationRequestedAt).not.toBeNull();
    expect((await ping(old)).body.rotateToken).toBe(true);

    const issued = await newToken(old);
    expect(issued.status).toBe(201);
    const fresh = issued.body.deployToken as string;
    expect(fresh).toMatch(/^gantry-deploy-/);
    const answer = await ping(fresh);
    expect(answer.body).toMatchObject({ name: 'asked', rotateToken: false });
    expect(answer.body.deployTokenCreatedAt > answer.body.tokenRotationRequestedAt).toBe(true);

    // The old token lives out its overlap, but is never due again and cannot mint a successor.
    expect((await ping(old)).body.rotateToken).toBe(false);
    expect((await newToken(old)).status).toBe(409);
    await waitFor('the old token to expire', async () => (await ping(old)).status === 401, 10_000);
    expect((await ping(fresh)).status).toBe(200);
  });

  test('a token mints no successor unless a rotation is due, and never for its neighbour', async () => {
    const own = await createCluster('not-due');
    const neighbour = await createCluster('neighbour');
    const refused = await newToken(own);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/not due for rotation/);

    await requestRotation('neighbour');
    expect((await ping(own)).body.rotateToken).toBe(false);
    expect((await newToken(own)).status).toBe(409);
    expect((await ping(neighbour)).body).toMatchObject({ name: 'neighbour', rotateToken: true });
  });

  test('the rights around rotation: agents cannot ask for one, users cannot mint agent tokens', async () => {
    const token = await createCluster('rights');
    expect((await apiCall(first, 'POST', '/v1/clusters/rights/token-rotation', token)).status).toBe(401);
    expect((await apiCall(first, 'POST', '/v1/agent/token', admin)).status).toBe(401);
    expect((await apiCall(first, 'POST', '/v1/clusters/nowhere/token-rotation', admin)).status).toBe(404);
  });

  test('an agent that crashed before storing its new token keeps its old one, and the unused one ends with it', async () => {
    const old = await createCluster('crashed');
    await requestRotation('crashed');
    const lost = (await newToken(old)).body.deployToken as string;
    // Never used: the old token is still the one in use, with no end, and still due.
    const oldToken = (await clusterForDeployToken(first.store.db, old))!.token;
    const row = await first.store.db
      .selectFrom('deploy_tokens')
      .select('expires_at')
      .where('id', '=', oldToken.id)
      .executeTakeFirstOrThrow();
    expect(row.expires_at).toBeNull();
    const answer = await ping(old);
    expect(answer.status).toBe(200);
    expect(answer.body.rotateToken).toBe(true);

    const stored = (await newToken(old)).body.deployToken as string;
    expect((await ping(stored)).body.rotateToken).toBe(false);
    await waitFor(
      'the old and the lost token to expire',
      async () => (await ping(old)).status === 401 && (await ping(lost)).status === 401,
    );
    expect((await ping(stored)).status).toBe(200);
  });

  test("revoking a cluster's tokens closes its push channels at once here, and at the next check on another replica", async () => {
    const leaked = await createCluster('leaked');
    const here = await socketOf(first, leaked);
    const there = await socketOf(second, leaked);
    const bystander = await socketOf(first, await createCluster('bystander'));
    const revoked = await apiCall(first, 'POST', '/v1/clusters/leaked/token', admin, { revokeOthers: true });
    expect(revoked.status).toBe(201);
    expect(await here.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
    expect(there.socket.readyState).toBe(WebSocket.OPEN);
    await second.channels.checkTokens();
    expect(await there.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
    expect(bystander.socket.readyState).toBe(WebSocket.OPEN);
    // And the leaked token cannot open a new one.
    await expect(socketOf(first, leaked)).rejects.toThrow(/401/);
    bystander.socket.close();
  });

  test('a push channel ends with its token when the overlap runs out, and a deleted cluster ends them all', async () => {
    const old = await createCluster('expiring');
    const channel = await socketOf(first, old);
    await requestRotation('expiring');
    const fresh = (await newToken(old)).body.deployToken as string;
    const current = await socketOf(first, fresh);
    await first.channels.checkTokens();
    expect(channel.socket.readyState).toBe(WebSocket.OPEN);
    await waitFor('the old token to expire', async () => (await ping(old)).status === 401, 10_000);
    await first.channels.checkTokens();
    expect(await channel.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
    expect(current.socket.readyState).toBe(WebSocket.OPEN);

    expect((await apiCall(first, 'DELETE', '/v1/clusters/expiring', admin)).status).toBe(204);
    expect(await current.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
  });
});
