/**
 * Opens the fleet server's database: SQLite in a file by default (nothing to set up), PostgreSQL for production
 * and several replicas. Both run the same Kysely queries over the schema in schema.ts, migrated at open.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { MIGRATIONS } from './migrations.ts';
import type { Database } from './schema.ts';
import { messageOf } from '../problems.ts';

export type DatabaseKind = 'sqlite' | 'postgres';

/** An open database; `close()` ends its connections. */
export interface Store {
  db: Kysely<Database>;
  kind: DatabaseKind;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL pool size per replica. Default 10. */
  poolSize?: number;
}

/**
 * Opens `url` and brings its schema to the newest migration.
 * @param url `postgres://user:password@host:port/database` (or `postgresql://`), else a SQLite file path
 *   (optionally `sqlite:` + path); the file's folder is created.
 * @throws Error naming the migration that failed, or the connection error (the password is never in it).
 */
export async function openStore(url: string, options: OpenOptions = {}): Promise<Store> {
  const store = /^postgres(ql)?:\/\//.test(url) ? openPostgres(url, options) : await openSqlite(url.replace(/^sqlite:/, ''));
  try {
    await migrate(store.db);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

function openPostgres(url: string, options: OpenOptions): Store {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // A client losing its connection (a PostgreSQL restart) must not crash the process: an idle one is reported on the
  // pool, which replaces it; one checked out between two queries (in a transaction) emits on itself, and its next
  // query fails, which the caller sees.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, kind: 'postgres', close: () => db.destroy() };
}

async function openSqlite(path: string): Promise<Store> {
  const file = resolve(path);
  await mkdir(dirname(file), { recursive: true });
  const database = new SqliteDatabase(file);
  // WAL lets readers run beside the one writer; foreign keys are off by default in SQLite and on in PostgreSQL.
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  reuseStatements(database);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  return { db, kind: 'sqlite', close: () => db.destroy() };
}

/** Prepared statements kept per SQL text; the oldest is dropped beyond this many. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew, and better-sqlite3 frees a statement's native memory only when V8 collects the
 * statement, while V8 does not count that memory: with 10,000 agents the server's RSS peaked 750 MiB higher, in
 * statements waiting for a GC. The same SQL reuses its statement instead (the store never streams, so none is busy twice).
 */
function reuseStatements(database: SqliteDatabase.Database): void {
  const prepare = database.prepare.bind(database);
  const statements = new Map<string, SqliteDatabase.Statement>();
  database.prepare = ((source: string) => {
    let statement = statements.get(source);
    if (!statement) {
      statement = prepare(source);
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
      statements.set(source, statement);
    }
    return statement;
  }) as typeof database.prepare;
}

async function migrate(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } });
  const { error, results } = await migrator.migrateToLatest();
  if (error === undefined) return;
  const failed = results?.find((result) => result.status === 'Error')?.migrationName;
  const reason = messageOf(error);
  throw new Error(`database: migration ${failed ?? '(none ran)'} failed: ${reason}`);
}

/** Ids per `IN (…)` list: well under SQLite's 32,766 bound parameters and PostgreSQL's 65,535. */
export const IN_CHUNK = 1000;

/** Runs `query` over `ids` in chunks of IN_CHUNK and concatenates the rows (none, and no query, for no ids). */
export async function inChunks<T>(ids: readonly string[], query: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const rows: T[] = [];
  for (let start = 0; start < ids.length; start += IN_CHUNK) rows.push(...(await query(ids.slice(start, start + IN_CHUNK))));
  return rows;
}

/** Whether `error` is a unique-constraint violation, on either database (SQLite's code, PostgreSQL's SQLSTATE 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * Runs `work` in `db`'s transaction when `db` is one, else in a new transaction: Kysely does not nest them, and a
 * store function called inside a caller's transaction must join it, so that both commit or neither does.
 */
export function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);
}
