/**
 * updateServices on SQLite and PostgreSQL: many services updated in batched transactions get the revisions one
 * updateService each would give them, and each revised service is handed on once its batch is committed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { createCluster } from './clusters.ts';
import { openStore, type Store } from './database.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { listRevisions } from './revisions.ts';
import { createService, listServices, removeService, type Service, type ServiceRef, type ServiceSpec, updateServices } from './services.ts';

/** More than two batches (updateServices commits 200 to a transaction). */
const COUNT = 450;

describe.each(DATABASE_KINDS)('updateServices on %s', (kind) => {
  const box = new SecretBox(randomBytes(32));
  const spec: ServiceSpec = { namespace: 'web', git: { ref: 'main', folder: 'web' }, renderer: { kind: 'raw' } };
  const first = { commit: 'a'.repeat(40), digest: 'sha256:first' };
  let database: TestDatabase;
  let store: Store;
  let services: Service[];

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await openStore(database.url);
    const { cluster } = await createCluster(store.db, { name: 'edge', tags: {} });
    for (let index = 0; index < COUNT; index++) {
      const name = `web-${String(index).padStart(3, '0')}`;
      await createService(store.db, box, { clusterId: cluster.id, name, spec, configuration: { level: '1' } }, first, { by: 'test' });
    }
    services = await listServices(store.db, { clusterId: cluster.id });
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test('revises each changed service once, skips the unchanged and the deleted, and hands on each revised one', async () => {
    const [deleted, unchanged, ...changed] = services;
    await removeService(store.db, deleted!.id);
    const second = { commit: 'b'.repeat(40), digest: 'sha256:second' };
    const updates = [
      { serviceId: deleted!.id, changes: { configuration: { level: '2' } }, source: second, author: { by: 'test' } },
      { serviceId: unchanged!.id, changes: { configuration: { level: '1' } }, source: first, author: { by: 'test' } },
      ...changed.map((service) => ({
        serviceId: service.id,
        changes: { configuration: { level: '2' } },
        source: second,
        author: { by: 'git', message: 'commit bbbb' },
      })),
    ];
    const handedOn: ServiceRef[] = [];
    const revised = await updateServices(store.db, box, updates, (service) => handedOn.push(service));

    expect(revised).toBe(COUNT - 2);
    expect(handedOn.map((service) => service.id).sort()).toEqual(changed.map((service) => service.id).sort());
    expect(new Set(handedOn.map((service) => service.clusterId))).toEqual(new Set([services[0]!.clusterId]));
    const now = new Map((await listServices(store.db, { clusterId: services[0]!.clusterId })).map((service) => [service.id, service]));
    for (const { id } of changed) {
      expect(now.get(id)?.revision).toMatchObject({
        number: 2,
        commit: second.commit,
        digest: second.digest,
        createdBy: 'git',
        message: 'commit bbbb',
      });
    }
    expect((await listRevisions(store.db, unchanged!.id)).map((revision) => revision.number)).toEqual([1]);
  });
});
