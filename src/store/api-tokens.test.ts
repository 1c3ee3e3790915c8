import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { ensureAdminToken, identityForApiToken } from './api-tokens.ts';
import { openStore, type Store } from './database.ts';

describe.each(DATABASE_KINDS)('API tokens on %s', (kind) => {
  let database: TestDatabase;
  let replicas: Store[];

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    // Two connections to one database, as two server replicas starting together.
    replicas = [await openStore(database.url), await openStore(database.url)];
  });

  afterAll(async () => {
    for (const store of replicas ?? []) await store.close();
    await database?.drop();
  });

  test('replicas starting together on an empty database make one admin token, and later starts none', async () => {
    const made = (await Promise.all(replicas.map((store) => ensureAdminToken(store.db)))).filter((token) => token !== undefined);
    expect(made).toHaveLength(1);
    expect(await identityForApiToken(replicas[1]!.db, made[0]!)).toMatchObject({ name: 'admin', role: 'admin' });
    expect(await ensureAdminToken(replicas[0]!.db)).toBeUndefined();
  });
});
