/**
 * Rejected revisions over real HTTP on SQLite and PostgreSQL with a real git repository: a writer rejects a
 * revision of their service, which moves back; the same content never comes back by a commit or an update, and the
 * next commit that changes the folder flows; the neighbouring service and cluster are untouched; fleet-wide is an
 * admin's, and moves every service of the folder that runs it; an admin lists and lifts rejections; a move back the
 * database refuses (as a full disk would) leaves no rejection behind.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions, userToken } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';

const CONFIGMAP = (value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: "${value}"\n`;

describe.each(DATABASE_KINDS)('rejected revisions on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  let writer: string;
  const { log } = capturedLogger('info');
  const call = (method: string, url: string, token: string, body?: unknown) => apiCall(server, method, url, token, body);
  const service = async (cluster: string) => (await call('GET', `/v1/clusters/${cluster}/services/web`, admin)).body;
  /** Waits until the service's current revision runs `commit`. */
  const runs = (cluster: string, commit: string) =>
    waitFor(`${cluster}/web at ${commit.slice(0, 7)}`, async () => {
      const found = await service(cluster);
      return found.revision.commit === commit ? found : undefined;
    });

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-rejections-test-'));
    repo = await createRepo({ 'apps/web/configmap.yaml': CONFIGMAP('one') });
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }, { gitPollIntervalMs: 300 }));
    admin = server.adminToken!;
    await call('POST', '/v1/repositories', admin, { url: repo.url });
    for (const cluster of ['dev', 'prod']) {
      await call('POST', '/v1/clusters', admin, { name: cluster });
      const created = await call('POST', `/v1/clusters/${cluster}/services`, admin, {
        name: 'web',
        namespace: 'web',
        repository: repo.url,
        git: { ref: 'main', folder: 'apps/web' },
      });
      expect(created.status).toBe(201);
    }
    writer = await userToken(server, 'wanda', 'writer', { clusters: ['dev'] });
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('a writer rejects the revision their service runs: it moves back, and that content never runs there again', async () => {
    const bad = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('two') });
    const before = await runs('dev', bad);
    await runs('prod', bad);
    const rejected = await call('POST', `/v1/clusters/dev/services/web/revisions/${before.revision.number}/reject`, writer, {
      reason: 'breaks checkout',
    });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toMatchObject({
      rejection: { folder: 'apps/web', commit: bad, service: { cluster: 'dev', name: 'web' }, reason: 'breaks checkout', by: 'wanda' },
      movedBack: [{ cluster: 'dev', name: 'web', from: before.revision.number, to: before.revision.number + 1 }],
      stuck: [],
    });
    const moved = await service('dev');
    expect(moved.revision).toMatchObject({
      number: before.revision.number + 1,
      message: `revision ${before.revision.number} rejected (breaks checkout): back to revision 1`,
    });
    expect(moved.revision.digest).not.toBe(before.revision.digest);
    expect(moved.pinned).toBeNull();
    // The neighbouring cluster's service of the same folder still runs it: the rejection was for dev/web only.
    expect((await service('prod')).revision.commit).toBe(bad);
    const listed = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body as Array<{
      number: number;
      rejected?: unknown;
    }>;
    expect(listed.find((revision) => revision.number === before.revision.number)?.rejected).toMatchObject({ reason: 'breaks checkout' });
    expect(listed.filter((revision) => revision.rejected)).toHaveLength(1);

    // The next commit that changes the folder flows; a later commit bringing the rejected content back does not.
    const good = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('three') });
    await runs('dev', good);
    const again = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('two') });
    await runs('prod', again);
    expect((await service('dev')).revision.commit).toBe(good);
    // Nor by an update naming it.
    const update = await call('PATCH', '/v1/clusters/dev/services/web', admin, { git: { ref: again } });
    expect(update).toMatchObject({ status: 409, body: { message: expect.stringContaining('was rejected by wanda: breaks checkout') } });
  });

  test('a rejected revision waiting behind a pin is skipped by the release', async () => {
    const before = await service('prod');
    await call('POST', '/v1/clusters/prod/services/web/rollback', admin, { revision: 1 });
    const waiting = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('four') });
    const pinned = await waitFor('the commit waiting behind the pin', async () => {
      const found = await service('prod');
      const newest = (await call('GET', '/v1/clusters/prod/services/web/revisions', admin)).body[0];
      return newest.commit === waiting && found.pendingRevision === newest.number ? found : undefined;
    });
    const rejected = await call('POST', `/v1/clusters/prod/services/web/revisions/${pinned.pendingRevision}/reject`, admin, {
      reason: 'four is broken',
    });
    // Nothing ran it: nothing moves.
    expect(rejected.body).toMatchObject({ movedBack: [], stuck: [] });
    const released = await call('POST', '/v1/clusters/prod/services/web/release', admin);
    // The newest revision that is not rejected: the pinned copy, or one the tracker recorded before the rejected one
    // (main's commit before "four", if a poll came between the rollback and that commit).
    expect(released.body.pinned).toBeNull();
    expect(released.body.revision.commit).not.toBe(waiting);
    expect(released.body.revision.number).toBeGreaterThanOrEqual(pinned.revision.number);
    expect(released.body.revision.number).toBeLessThan(pinned.pendingRevision);
    expect(released.body.revision.number).toBeGreaterThan(before.revision.number);
  });

  test('fleet-wide is an admin’s, from the neighbouring scope a writer gets 403, and a missing revision 404', async () => {
    const prod = await service('prod');
    const url = (cluster: string, number: number) => `/v1/clusters/${cluster}/services/web/revisions/${number}/reject`;
    expect((await call('POST', url('prod', prod.revision.number), writer, { reason: 'not mine' })).status).toBe(403);
    const dev = await service('dev');
    expect((await call('POST', url('dev', dev.revision.number), writer, { reason: 'all of it', fleetWide: true })).status).toBe(403);
    expect((await call('POST', url('dev', 999), writer, { reason: 'nothing' })).status).toBe(404);
    expect((await call('GET', '/v1/rejections', writer)).status).toBe(403);
  });

  test('an admin rejects fleet-wide: every service of the folder that runs it moves back; rejections are listed and lifted', async () => {
    const dev = await service('dev');
    const prodBefore = await service('prod');
    // dev runs the newest commit; prod, pinned at first, then released, does not. Reject dev's for the whole folder.
    const rejected = await call('POST', `/v1/clusters/dev/services/web/revisions/${dev.revision.number}/reject`, admin, {
      reason: 'three is wrong everywhere',
      fleetWide: true,
    });
    expect(rejected.body).toMatchObject({ rejection: { service: null }, movedBack: [{ cluster: 'dev', name: 'web' }] });
    // dev went back to the revision before, not rejected for it.
    const back = await service('dev');
    expect(back.revision.message).toBe(
      `revision ${dev.revision.number} rejected (three is wrong everywhere): back to revision ${dev.revision.number - 1}`,
    );
    const revisions = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body as Array<{
      number: number;
      digest: string;
    }>;
    expect(back.revision.digest).toBe(revisions.find((revision) => revision.number === dev.revision.number - 1)!.digest);
    // prod does not run "three": it stays.
    expect((await service('prod')).revision.number).toBe(prodBefore.revision.number);

    const listed = await call('GET', '/v1/rejections', admin);
    expect(listed.body.map((rejection: { reason: string }) => rejection.reason)).toEqual([
      'three is wrong everywhere',
      'four is broken',
      'breaks checkout',
    ]);
    const lifted = listed.body[0].id as string;
    expect((await call('DELETE', `/v1/rejections/${lifted}`, admin)).status).toBe(204);
    expect((await call('DELETE', `/v1/rejections/${lifted}`, admin)).status).toBe(404);
    expect((await call('GET', '/v1/rejections', admin)).body).toHaveLength(2);
  });

  test('a move back the database refuses leaves no rejection: the rejection and the moves are one transaction', async () => {
    const { db } = server.store;
    // A revision of its own to reject, with the one dev ran until now to go back to.
    const before = await runs('dev', await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('seven') }));
    const rejections = (await call('GET', '/v1/rejections', admin)).body.length as number;
    // Every new revision refused, as a full disk would refuse it.
    if (kind === 'sqlite')
      await sql`CREATE TRIGGER refuse_revisions BEFORE INSERT ON revisions BEGIN SELECT RAISE(ABORT, 'disk full'); END`.execute(db);
    else {
      await sql`CREATE FUNCTION refuse_revisions() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ LANGUAGE plpgsql`.execute(
        db,
      );
      await sql`CREATE TRIGGER refuse_revisions BEFORE INSERT ON revisions FOR EACH ROW EXECUTE FUNCTION refuse_revisions()`.execute(db);
    }
    try {
      const refused = await call('POST', `/v1/clusters/dev/services/web/revisions/${before.revision.number}/reject`, admin, {
        reason: 'no room',
      });
      expect(refused.status).toBeGreaterThanOrEqual(500);
    } finally {
      if (kind === 'sqlite') await sql`DROP TRIGGER refuse_revisions`.execute(db);
      else await sql`DROP FUNCTION refuse_revisions() CASCADE`.execute(db);
    }
    expect((await call('GET', '/v1/rejections', admin)).body).toHaveLength(rejections);
    expect((await service('dev')).revision.number).toBe(before.revision.number);
    const rejected = await call('POST', `/v1/clusters/dev/services/web/revisions/${before.revision.number}/reject`, admin, {
      reason: 'room again',
    });
    expect(rejected.body).toMatchObject({ movedBack: [{ cluster: 'dev', name: 'web' }] });
    expect((await call('GET', '/v1/rejections', admin)).body).toHaveLength(rejections + 1);
  });
});
