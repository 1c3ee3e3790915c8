import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { clusterForDeployToken, createCluster, deleteCluster, getCluster } from './clusters.ts';
import { openStore, type Store } from './database.ts';
import {
  type DeployTokenUse,
  insertDeployToken,
  recordFirstUse,
  requestTokenRotation,
  rotateDeployToken,
  rotationDue,
  validDeployTokens,
} from './deploy-tokens.ts';

const OVERLAP = 10 * 60_000;
const at = (iso: string) => new Date(iso);

describe.each(DATABASE_KINDS)('deploy tokens on %s', (kind) => {
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

  /** The token's record after a request with it at `now`, as requireAgent makes it; undefined when refused. */
  const use = async (token: string, now: Date): Promise<DeployTokenUse | undefined> => {
    const found = await clusterForDeployToken(store.db, token, now);
    if (found && found.token.firstUsedAt === null) await recordFirstUse(store.db, found.cluster.id, found.token, OVERLAP, now);
    return found?.token;
  };

  test("a token's first use expires the older ones after the overlap, not before, and not the newer ones", async () => {
    const { cluster, deployToken: first } = await createCluster(store.db, { name: 'overlap' }, at('2026-01-01T00:00:00.000Z'));
    expect(await use(first, at('2026-01-01T00:01:00.000Z'))).toBeDefined();
    const second = await insertDeployToken(store.db, cluster.id, at('2026-01-02T00:00:00.000Z'));
    const unused = await insertDeployToken(store.db, cluster.id, at('2026-01-03T00:00:00.000Z'));

    // Made, not used: the first token is untouched.
    expect(await use(first, at('2026-01-03T12:00:00.000Z'))).toBeDefined();
    expect(await use(second, at('2026-01-04T00:00:00.000Z'))).toBeDefined();
    expect((await getCluster(store.db, 'overlap')).deployTokenCreatedAt).toBe('2026-01-02T00:00:00.000Z');
    expect(await use(first, at('2026-01-04T00:09:59.000Z'))).toBeDefined();
    expect(await use(first, at('2026-01-04T00:10:00.000Z'))).toBeUndefined();
    // The newer token, made but not used yet, outlives it, and its first use ends the second one.
    expect(await use(unused, at('2026-01-05T00:00:00.000Z'))).toBeDefined();
    expect(await use(second, at('2026-01-05T00:09:00.000Z'))).toBeDefined();
    expect(await use(second, at('2026-01-05T00:10:01.000Z'))).toBeUndefined();
    expect(await use(unused, at('2026-02-01T00:00:00.000Z'))).toBeDefined();
  });

  test('a second first-use record, from a request that raced the first, does not push the expiry later', async () => {
    const { cluster, deployToken: old } = await createCluster(store.db, { name: 'race' }, at('2026-01-01T00:00:00.000Z'));
    const fresh = await insertDeployToken(store.db, cluster.id, at('2026-01-02T00:00:00.000Z'));
    const found = await clusterForDeployToken(store.db, fresh, at('2026-01-02T00:00:00.000Z'));
    await recordFirstUse(store.db, cluster.id, found!.token, OVERLAP, at('2026-01-02T00:00:00.000Z'));
    await recordFirstUse(store.db, cluster.id, found!.token, OVERLAP, at('2026-01-02T05:00:00.000Z'));
    expect(await use(old, at('2026-01-02T00:10:01.000Z'))).toBeUndefined();
  });

  test('revoking the others ends them at once; a deleted cluster ends all of its tokens', async () => {
    const { cluster, deployToken: old } = await createCluster(store.db, { name: 'revoke' });
    const other = await createCluster(store.db, { name: 'revoke-neighbour' });
    const fresh = await rotateDeployToken(store.db, cluster.id, { revokeOthers: true });
    expect(await use(old, new Date())).toBeUndefined();
    expect(await use(fresh, new Date())).toBeDefined();
    expect(await use(other.deployToken, new Date())).toBeDefined();
    await deleteCluster(store.db, 'revoke');
    expect(await use(fresh, new Date())).toBeUndefined();
  });

  test('validDeployTokens keeps the valid ids only, past the bound-parameter chunk', async () => {
    const { cluster, deployToken: old } = await createCluster(store.db, { name: 'valid' }, at('2026-01-01T00:00:00.000Z'));
    const oldId = (await clusterForDeployToken(store.db, old))!.token.id;
    const fresh = await insertDeployToken(store.db, cluster.id, at('2026-01-02T00:00:00.000Z'));
    const freshId = (await use(fresh, at('2026-01-02T00:00:00.000Z')))!.id;
    const unknown = Array.from({ length: 1_200 }, (_, index) => `no-such-token-${index}`);
    const ids = [...unknown, oldId, freshId];
    expect(await validDeployTokens(store.db, ids, at('2026-01-02T00:05:00.000Z'))).toEqual(new Set([oldId, freshId]));
    expect(await validDeployTokens(store.db, ids, at('2026-01-02T00:10:00.000Z'))).toEqual(new Set([freshId]));
  });

  test('a rotation asked for is due for the token in use until a newer one is used; a replaced token is never due', async () => {
    const { cluster, deployToken: old } = await createCluster(store.db, { name: 'due' }, at('2026-01-01T00:00:00.000Z'));
    const oldUse = (await use(old, at('2026-01-01T00:00:00.000Z')))!;
    const noMaxAge = 0;
    expect(rotationDue(await getCluster(store.db, 'due'), oldUse, noMaxAge)).toBe(false);
    await requestTokenRotation(store.db, cluster.id, at('2026-01-10T00:00:00.000Z'));
    expect(rotationDue(await getCluster(store.db, 'due'), oldUse, noMaxAge)).toBe(true);

    const fresh = await insertDeployToken(store.db, cluster.id, at('2026-01-10T00:00:01.000Z'));
    // Made but not used (the agent crashed before storing it): the old token is still the one to rotate.
    expect(rotationDue(await getCluster(store.db, 'due'), oldUse, noMaxAge)).toBe(true);
    const freshUse = (await use(fresh, at('2026-01-10T00:00:02.000Z')))!;
    const after = await getCluster(store.db, 'due');
    expect(rotationDue(after, freshUse, noMaxAge)).toBe(false);
    expect(rotationDue(after, oldUse, noMaxAge)).toBe(false);
  });

  test('a token as old as the maximum age is due; younger, or with no maximum, it is not', async () => {
    const { deployToken } = await createCluster(store.db, { name: 'age' }, at('2026-01-01T00:00:00.000Z'));
    const token = (await use(deployToken, at('2026-01-01T00:00:00.000Z')))!;
    const cluster = await getCluster(store.db, 'age');
    const day = 24 * 3_600_000;
    expect(rotationDue(cluster, token, 30 * day, at('2026-01-30T23:59:59.000Z'))).toBe(false);
    expect(rotationDue(cluster, token, 30 * day, at('2026-01-31T00:00:00.000Z'))).toBe(true);
    expect(rotationDue(cluster, token, 0, at('2027-01-01T00:00:00.000Z'))).toBe(false);
  });
});
