import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import {
  clusterForDeployToken as authenticate,
  clusterHealth,
  createCluster,
  deleteCluster,
  getCluster,
  listClusters,
  recordPing,
  setClusterTags,
} from './clusters.ts';
import { rotateDeployToken } from './deploy-tokens.ts';
import { openStore, type Store } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import { MIGRATIONS } from './migrations.ts';

describe.each(DATABASE_KINDS)('clusters on %s', (kind) => {
  let database: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await openStore(database.url);
  });

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test('migrations run once: reopening finds the schema in place', async () => {
    const again = await openStore(database.url);
    try {
      const ran = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(again.db);
      expect(ran.rows.map((row) => row.name)).toEqual(Object.keys(MIGRATIONS).sort());
    } finally {
      await again.close();
    }
  });

  test('creates, lists, gets and tags clusters', async () => {
    const { cluster } = await createCluster(store.db, { name: 'dev', tags: { tier: 'web' } });
    await createCluster(store.db, { name: 'prod', handle: 'prod-eu', distro: 'k3s' });
    expect(cluster).toMatchObject({ name: 'dev', handle: 'dev', tags: { tier: 'web' }, distro: null, pingedAt: null });
    expect((await listClusters(store.db)).map((c) => c.name)).toEqual(['dev', 'prod']);
    expect(await getCluster(store.db, 'prod')).toMatchObject({ handle: 'prod-eu', distro: 'k3s' });
    expect((await setClusterTags(store.db, 'prod', { tier: 'web', region: 'eu' })).tags).toEqual({ tier: 'web', region: 'eu' });
  });

  test('refuses a second cluster with a taken name or handle, naming the field', async () => {
    await createCluster(store.db, { name: 'taken', handle: 'taken-handle' });
    await expect(createCluster(store.db, { name: 'taken' })).rejects.toMatchObject(new ConflictError('cluster', 'name', 'taken'));
    await expect(createCluster(store.db, { name: 'other', handle: 'taken-handle' })).rejects.toMatchObject({
      name: 'ConflictError',
      field: 'handle',
    });
  });

  test('names what it cannot find', async () => {
    await expect(getCluster(store.db, 'nowhere')).rejects.toBeInstanceOf(NotFoundError);
    await expect(deleteCluster(store.db, 'nowhere')).rejects.toThrow('cluster "nowhere" not found');
    await expect(setClusterTags(store.db, 'nowhere', {})).rejects.toBeInstanceOf(NotFoundError);
  });

  test('a deploy token authenticates its own cluster only; rotation keeps or revokes the old one', async () => {
    const a = await createCluster(store.db, { name: 'token-a' });
    const b = await createCluster(store.db, { name: 'token-b' });
    const clusterForDeployToken = async (db: typeof store.db, token: string) => (await authenticate(db, token))?.cluster;
    expect((await clusterForDeployToken(store.db, a.deployToken))?.name).toBe('token-a');
    expect((await clusterForDeployToken(store.db, b.deployToken))?.name).toBe('token-b');
    expect(await clusterForDeployToken(store.db, `${a.deployToken}x`)).toBeUndefined();
    expect(await clusterForDeployToken(store.db, 'not-a-token')).toBeUndefined();

    const second = await rotateDeployToken(store.db, a.cluster.id, { revokeOthers: false });
    expect((await clusterForDeployToken(store.db, a.deployToken))?.name).toBe('token-a');
    expect((await clusterForDeployToken(store.db, second))?.name).toBe('token-a');

    const third = await rotateDeployToken(store.db, a.cluster.id, { revokeOthers: true });
    expect(await clusterForDeployToken(store.db, a.deployToken)).toBeUndefined();
    expect(await clusterForDeployToken(store.db, second)).toBeUndefined();
    expect((await clusterForDeployToken(store.db, third))?.name).toBe('token-a');
    expect((await clusterForDeployToken(store.db, b.deployToken))?.name).toBe('token-b');

    await deleteCluster(store.db, 'token-b');
    expect(await clusterForDeployToken(store.db, b.deployToken)).toBeUndefined();
  });

  test('keeps only hashes of deploy tokens', async () => {
    const { deployToken } = await createCluster(store.db, { name: 'hashed' });
    const rows = await store.db.selectFrom('deploy_tokens').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(deployToken);
    expect(JSON.stringify(rows)).not.toContain(deployToken.slice(-20));
    if (kind === 'sqlite') {
      const files = await Promise.all([database.url, `${database.url}-wal`].map((file) => readFile(file).catch(() => Buffer.alloc(0))));
      expect(Buffer.concat(files).includes(deployToken.slice(-20))).toBe(false);
    }
  });

  test('records pings', async () => {
    const { cluster } = await createCluster(store.db, { name: 'pinged' });
    expect((await getCluster(store.db, 'pinged')).health).toBe('UNKNOWN');
    const now = new Date('2026-11-24T12:00:00.000Z');
    await recordPing(store.db, cluster.id, { kubernetesVersion: '1.35.4', agentVersion: '0.1.0', distro: 'generic' }, now);
    expect(await getCluster(store.db, 'pinged')).toMatchObject({
      kubernetesVersion: '1.35.4',
      agentVersion: '0.1.0',
      distro: 'generic',
      pingedAt: now.toISOString(),
      health: 'UNHEALTHY', // a ping of a fixed past time
    });
    await recordPing(store.db, cluster.id, { kubernetesVersion: '1.35.4', agentVersion: '0.1.0' });
    expect((await getCluster(store.db, 'pinged')).health).toBe('HEALTHY');
  });
});

describe('clusterHealth', () => {
  const now = new Date('2026-11-24T12:00:00.000Z');
  test('healthy up to five minutes after the last ping, unhealthy after, unknown before the first', () => {
    expect(clusterHealth('2026-11-24T11:55:00.000Z', now)).toBe('HEALTHY');
    expect(clusterHealth('2026-11-24T11:54:59.999Z', now)).toBe('UNHEALTHY');
    expect(clusterHealth(null, now)).toBe('UNKNOWN');
  });
});
