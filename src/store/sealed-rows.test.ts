/**
 * Sealed values bound to their rows, on SQLite and PostgreSQL: a value copied by SQL into another row or column does
 * not open (the error names the place), global service copies each get their own, and values sealed before v2 open
 * and are sealed again for their place when the server starts (resealLegacyValues).
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { createCluster } from './clusters.ts';
import { openStore, type Store } from './database.ts';
import { createGlobalService, getGlobalService } from './global-services.ts';
import { createRepository, getRepository, repositoryCredentials } from './repositories.ts';
import { resealLegacyValues } from './reseal.ts';
import { SecretBox } from '../crypto/secret-box.ts';
import { createService, type ServiceSpec, serviceSecrets, servicesForAgent, updateServices } from './services.ts';

/** A value as Gantry sealed it before v2: AES-256-GCM without additional data. */
function sealV1(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

describe.each(DATABASE_KINDS)('sealed values on %s', (kind) => {
  const key = randomBytes(32);
  const box = new SecretBox(key);
  const spec: ServiceSpec = { namespace: 'web', git: { ref: 'main', folder: 'web' }, renderer: { kind: 'raw' } };
  const source = { commit: 'a'.repeat(40), digest: 'sha256:first' };
  let database: TestDatabase;
  let store: Store;
  let clusterId: string;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await openStore(database.url);
    clusterId = (await createCluster(store.db, { name: 'edge', tags: {} })).cluster.id;
  });

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test("a repository's credentials copied into another repository's row do not open there", async () => {
    const a = await createRepository(store.db, box, { url: 'https://git.example/a.git', credentials: { password: 'a-secret' } });
    const b = await createRepository(store.db, box, { url: 'https://git.example/b.git', credentials: { password: 'b-secret' } });
    expect(await repositoryCredentials(store.db, box, b.id)).toEqual({ password: 'b-secret' });
    await sql`update git_repositories set credentials = (select credentials from git_repositories where id = ${a.id}) where id = ${b.id}`.execute(
      store.db,
    );
    await expect(repositoryCredentials(store.db, box, b.id)).rejects.toThrow(
      `secret git_repositories.credentials of ${b.id}: cannot decrypt (another encryption key, the value was altered, or it was sealed for another row or column)`,
    );
    expect(await repositoryCredentials(store.db, box, a.id)).toEqual({ password: 'a-secret' });
  });

  test("a service's configuration does not open in another service, nor as its secret values; copies sharing one object each open", async () => {
    const make = (name: string, configuration: Record<string, string>) =>
      createService(store.db, box, { clusterId, name, spec, configuration, secretValues: { token: `${name}-token` } }, source, {
        by: 'test',
      });
    const one = await make('one', { level: '1' });
    const two = await make('two', { level: '2' });
    const shared = { level: 'shared' };
    const update = (serviceId: string) => ({ serviceId, changes: { configuration: shared }, source, author: { by: 'global' } });
    expect(await updateServices(store.db, box, [update(one.id), update(two.id)], () => undefined)).toBe(2);
    const secrets = await serviceSecrets(store.db, box, [one.id, two.id]);
    expect(secrets.get(one.id)).toEqual({ configuration: shared, secretValues: { token: 'one-token' } });
    expect(secrets.get(two.id)).toEqual({ configuration: shared, secretValues: { token: 'two-token' } });
    const polled = await servicesForAgent(store.db, box, clusterId);
    expect(polled.map(({ service, secrets: opened }) => [service.name, opened, service.components])).toEqual([
      ['one', secrets.get(one.id), []],
      ['two', secrets.get(two.id), []],
    ]);

    await sql`update services set configuration = (select configuration from services where id = ${one.id}) where id = ${two.id}`.execute(
      store.db,
    );
    await expect(serviceSecrets(store.db, box, [two.id])).rejects.toThrow(`secret services.configuration of ${two.id}: cannot decrypt`);
    // The agents' poll opens the same rows, bound the same way.
    await expect(servicesForAgent(store.db, box, clusterId)).rejects.toThrow(`secret services.configuration of ${two.id}: cannot decrypt`);
    await sql`update services set secret_values = configuration where id = ${one.id}`.execute(store.db);
    await expect(serviceSecrets(store.db, box, [one.id])).rejects.toThrow(`secret services.secret_values of ${one.id}: cannot decrypt`);
  });

  test('values sealed before v2 open, and are sealed again for their place when the server starts', async () => {
    const repository = await createRepository(store.db, box, { url: 'https://git.example/old.git' });
    const service = await createService(store.db, box, { clusterId, name: 'old', spec }, source, { by: 'test' });
    const global = await createGlobalService(store.db, box, { name: 'old-global', tags: {}, template: { ...spec, name: 'old-global' } });
    const oldCredentials = sealV1(key, JSON.stringify({ password: 'old-secret' }));
    const oldConfiguration = sealV1(key, JSON.stringify({ level: 'old' }));
    await sql`update git_repositories set credentials = ${oldCredentials} where id = ${repository.id}`.execute(store.db);
    await sql`update services set configuration = ${oldConfiguration} where id = ${service.id}`.execute(store.db);
    await sql`update revisions set configuration = ${oldConfiguration} where service_id = ${service.id}`.execute(store.db);
    const template = JSON.stringify({ ...spec, name: 'old-global', sealedConfiguration: sealV1(key, JSON.stringify({ level: 'g' })) });
    await sql`update global_services set template = ${template} where id = ${global.id}`.execute(store.db);

    expect(await repositoryCredentials(store.db, box, repository.id)).toEqual({ password: 'old-secret' });
    expect((await serviceSecrets(store.db, box, [service.id])).get(service.id)?.configuration).toEqual({ level: 'old' });

    const { log } = capturedLogger('info');
    expect(await resealLegacyValues(store.db, box, log)).toBe(4);
    expect(await resealLegacyValues(store.db, box, log)).toBe(0);
    const row = await store.db
      .selectFrom('git_repositories')
      .select('credentials')
      .where('id', '=', repository.id)
      .executeTakeFirstOrThrow();
    expect(row.credentials).toMatch(/^v2\./);
    const revisions = await store.db.selectFrom('revisions').select('configuration').where('service_id', '=', service.id).execute();
    expect(revisions.every((revision) => revision.configuration?.startsWith('v2.'))).toBe(true);
    expect(await repositoryCredentials(store.db, box, repository.id)).toEqual({ password: 'old-secret' });
    expect((await serviceSecrets(store.db, box, [service.id])).get(service.id)?.configuration).toEqual({ level: 'old' });
    expect((await getGlobalService(store.db, box, 'old-global')).template.configuration).toEqual({ level: 'g' });
    expect((await getRepository(store.db, box, repository.id)).url).toBe('https://git.example/old.git');
  });
});
