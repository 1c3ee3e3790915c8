/**
 * Fresh databases for the fleet server's tests, of both kinds the server supports: a SQLite file in a temp folder,
 * and a new database on the local PostgreSQL server that test/global-setup.ts starts (GANTRY_TEST_POSTGRES_URL).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { DatabaseKind } from '../../src/store/database.ts';

export const DATABASE_KINDS: readonly DatabaseKind[] = ['sqlite', 'postgres'];

export interface TestDatabase {
  kind: DatabaseKind;
  /** What `openStore` and `gantry server --database-url` take. */
  url: string;
  /** Deletes the database (PostgreSQL: even with connections still open). */
  drop(): Promise<void>;
}

export async function createTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'gantry-sqlite-'));
    return { kind, url: join(dir, 'gantry.db'), drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const server = process.env.GANTRY_TEST_POSTGRES_URL;
  if (!server)
    throw new Error('GANTRY_TEST_POSTGRES_URL is not set: run the tests through vitest (test/global-setup.ts starts PostgreSQL)');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await onServer(server, `CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { kind, url: url.toString(), drop: () => onServer(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function onServer(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
