/**
 * Seals again, as v2 (bound to their place: secret-box.ts), the v1 values a database written by an older Gantry
 * still holds. The server runs it at every start, once the database is migrated: migrations run without the key,
 * and waiting for each row's next write would leave a value never written again (a repository's credentials) in
 * the v1 form for good, free to be copied to another row. Each value is replaced only if it is still the one read
 * (compare and set), so replicas starting together, or a write meanwhile, lose nothing.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';

/** A column of sealed values: the table, the column, the row's key column, and the column its place names. */
interface SealedColumn {
  table: string;
  column: string;
  key: string;
  /** The column whose value is SealContext.row (services' revisions are bound to their service). */
  placeRow: string;
  /** SealContext.table, when the place names another table than the one holding the value. */
  placeTable?: string;
}

const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'git_repositories', column: 'credentials', key: 'id', placeRow: 'id' },
  { table: 'helm_repositories', column: 'credentials', key: 'id', placeRow: 'url' },
  { table: 'notification_sinks', column: 'configuration', key: 'id', placeRow: 'name' },
  { table: 'services', column: 'configuration', key: 'id', placeRow: 'id' },
  { table: 'services', column: 'secret_values', key: 'id', placeRow: 'id' },
  { table: 'revisions', column: 'configuration', key: 'id', placeRow: 'service_id', placeTable: 'services' },
  { table: 'revisions', column: 'secret_values', key: 'id', placeRow: 'service_id', placeTable: 'services' },
];

const LEGACY_PREFIX = 'v1.';

/**
 * Seals every v1 value again for its place. A value that does not open (another key) is logged and left as it is:
 * reading it fails the same way, naming it.
 * @returns how many values were sealed again.
 */
export async function resealLegacyValues(db: Kysely<Database>, box: SecretBox, log: Logger): Promise<number> {
  let count = 0;
  const reseal = (sealed: string, place: SealContext): string | undefined => {
    try {
      return box.seal(box.open(sealed, place), place);
    } catch (error) {
      log.warn({ table: place.table, column: place.column, row: place.row, err: error }, 'a v1 sealed value does not open; left as it is');
      return undefined;
    }
  };
  for (const sealed of SEALED_COLUMNS) {
    const { rows } = await sql<{ row_key: string; place_row: string; value: string }>`
      select ${sql.ref(sealed.key)} as row_key, ${sql.ref(sealed.placeRow)} as place_row, ${sql.ref(sealed.column)} as value
      from ${sql.table(sealed.table)} where ${sql.ref(sealed.column)} like ${`${LEGACY_PREFIX}%`}`.execute(db);
    for (const row of rows) {
      const fresh = reseal(row.value, { table: sealed.placeTable ?? sealed.table, column: sealed.column, row: row.place_row });
      if (fresh === undefined) continue;
      const result = await sql`update ${sql.table(sealed.table)} set ${sql.ref(sealed.column)} = ${fresh}
        where ${sql.ref(sealed.key)} = ${row.row_key} and ${sql.ref(sealed.column)} = ${row.value}`.execute(db);
      count += Number(result.numAffectedRows ?? 0);
    }
  }
  // A global service's template is JSON holding its sealed configuration and secret values.
  const templates = await db
    .selectFrom('global_services')
    .select(['id', 'template'])
    .where('template', 'like', `%"${LEGACY_PREFIX}%`)
    .execute();
  for (const row of templates) {
    const template = JSON.parse(row.template) as Record<string, unknown>;
    let changed = 0;
    for (const [field, name] of [
      ['sealedConfiguration', 'configuration'],
      ['sealedSecretValues', 'secretValues'],
    ] as const) {
      const value = template[field];
      if (typeof value !== 'string' || !value.startsWith(LEGACY_PREFIX)) continue;
      const fresh = reseal(value, { table: 'global_services', column: `template.${name}`, row: row.id });
      if (fresh === undefined) continue;
      template[field] = fresh;
      changed++;
    }
    if (changed === 0) continue;
    const result = await db
      .updateTable('global_services')
      .set({ template: JSON.stringify(template) })
      .where('id', '=', row.id)
      .where('template', '=', row.template)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) count += changed;
  }
  return count;
}
