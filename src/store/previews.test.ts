/**
 * The previews store on SQLite and PostgreSQL: a DONE preview is reused for the same cache key until it expires (a
 * copy for another origin), a change of the service's live state makes another key, a PENDING preview no agent ran
 * fails at its expiry, rows a day past it are deleted, and a preview's own values are sealed in the database.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { createCluster } from './clusters.ts';
import { openStore, type Store } from './database.ts';
import {
  createPreview,
  expirePreviews,
  finishPreview,
  getPreview,
  type NewPreview,
  PREVIEW_TTL_MS,
  previewKey,
  previewsOf,
  previewValues,
} from './previews.ts';
import { createService, type Service, type ServiceSpec } from './services.ts';

const EMPTY = { create: [], change: [], delete: [], errors: [] };

describe.each(DATABASE_KINDS)('previews on %s', (kind) => {
  const box = new SecretBox(randomBytes(32));
  const spec: ServiceSpec = { namespace: 'web', git: { ref: 'main', folder: 'web' }, renderer: { kind: 'raw' } };
  let database: TestDatabase;
  let store: Store;
  let service: Service;
  const start = new Date('2026-11-29T10:00:00Z');
  const later = (ms: number) => new Date(start.getTime() + ms);
  const newPreview = (overrides: Partial<NewPreview> = {}): NewPreview => ({
    serviceId: service.id,
    clusterId: service.clusterId,
    ref: 'feature',
    commit: 'c'.repeat(40),
    digest: 'sha256:feature',
    spec,
    requestedBy: 'admin',
    cacheKey: previewKey(service, 'sha256:feature', spec, null),
    ...overrides,
  });

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await openStore(database.url);
    const { cluster } = await createCluster(store.db, { name: 'edge', tags: {} });
    service = await createService(
      store.db,
      box,
      { clusterId: cluster.id, name: 'web', spec },
      { commit: 'a'.repeat(40), digest: 'sha256:a' },
      { by: 'test' },
    );
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test('a DONE preview is reused for the same key until it expires; another origin gets a copy of its result', async () => {
    const first = await createPreview(store.db, box, newPreview(), start);
    expect(first).toMatchObject({ created: true, preview: { state: 'PENDING' } });
    // PENDING is not reused: the agent has not answered yet, a second request waits for a run of its own.
    expect((await createPreview(store.db, box, newPreview(), later(1_000))).created).toBe(true);
    await finishPreview(store.db, first.preview.id, { state: 'DONE', result: EMPTY }, later(2_000));

    const reused = await createPreview(store.db, box, newPreview(), later(3_000));
    expect(reused).toMatchObject({ created: false, preview: { id: first.preview.id, state: 'DONE' } });
    const origin = 'pipeline/p/dev/prod/context-1';
    const copied = await createPreview(store.db, box, newPreview({ origin, requestedBy: 'pipeline/p' }), later(4_000));
    expect(copied.created).toBe(false);
    expect(copied.preview).toMatchObject({ state: 'DONE', origin, requestedBy: 'pipeline/p', result: EMPTY });
    expect(copied.preview.id).not.toBe(first.preview.id);
    expect((await previewsOf(store.db, origin)).map((preview) => preview.id)).toEqual([copied.preview.id]);

    const expired = await createPreview(store.db, box, newPreview(), later(PREVIEW_TTL_MS + 1));
    expect(expired.created).toBe(true);
  });

  test("the key changes with the service's live state, its source, its spec and its values", () => {
    const key = previewKey(service, 'sha256:feature', spec, null);
    const drifted = { ...service, components: [{ ...component(), state: 'FAILED' as const }] };
    expect(previewKey(drifted, 'sha256:feature', spec, null)).not.toBe(key);
    expect(previewKey({ ...service, appliedRevisionId: 'other' }, 'sha256:feature', spec, null)).not.toBe(key);
    expect(previewKey(service, 'sha256:other', spec, null)).not.toBe(key);
    expect(previewKey(service, 'sha256:feature', { ...spec, namespace: 'other' }, null)).not.toBe(key);
    expect(previewKey(service, 'sha256:feature', spec, { configuration: { a: '1' }, secretValues: {} })).not.toBe(key);
  });

  test('a PENDING preview no agent ran fails at its expiry; rows a day past it are deleted', async () => {
    const { preview } = await createPreview(store.db, box, newPreview({ cacheKey: 'pending-key' }), start);
    expect(await expirePreviews(store.db, later(PREVIEW_TTL_MS - 1))).toEqual([]);
    const failed = await expirePreviews(store.db, later(PREVIEW_TTL_MS));
    expect(failed.map((entry) => entry.id)).toContain(preview.id);
    const after = await getPreview(store.db, preview.id);
    expect(after.state).toBe('FAILED');
    expect((after.result as typeof EMPTY).errors[0]).toMatch(/^expired: the cluster's agent did not run it within 10 minutes$/);
    // A late report changes nothing.
    expect(await finishPreview(store.db, preview.id, { state: 'DONE', result: EMPTY })).toBe(false);

    await expirePreviews(store.db, later(PREVIEW_TTL_MS + 24 * 60 * 60_000));
    await expect(getPreview(store.db, preview.id)).rejects.toThrow(/preview/);
  });

  test("a preview's own values are sealed in the database and open only for it", async () => {
    const values = { configuration: { password: 'hunter2-preview' }, secretValues: { token: 'tok-preview' } };
    const { preview } = await createPreview(store.db, box, newPreview({ values, cacheKey: 'values-key' }), start);
    const row = await store.db.selectFrom('previews').selectAll().where('id', '=', preview.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain('hunter2-preview');
    expect(JSON.stringify(row)).not.toContain('tok-preview');
    expect(await previewValues(store.db, box, preview.id)).toEqual(values);
    // Moved onto another preview's row, the sealed value does not open.
    const other = await createPreview(
      store.db,
      box,
      newPreview({ values: { configuration: {}, secretValues: {} }, cacheKey: 'other-key' }),
      start,
    );
    await store.db.updateTable('previews').set({ sealed_values: row.sealed_values }).where('id', '=', other.preview.id).execute();
    await expect(previewValues(store.db, box, other.preview.id)).rejects.toThrow(/cannot decrypt/);
  });
});

function component() {
  return { group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'web', name: 'web', state: 'RUNNING' as const, synced: true };
}
