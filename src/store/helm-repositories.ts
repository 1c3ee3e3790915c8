/**
 * Helm repositories (Plural's HelmRepository): the server pulls and lists the charts of a service whose `helm.url` is
 * one of these URLs with its basic-auth username and password, when it has them, sealed in the database and never
 * returned. A URL is the repository's identity, compared without a trailing slash.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database, HelmRepositoryTable } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';

export interface HelmCredentials {
  username: string;
  password: string;
}

/** A repository as readers see it: whether it has credentials, never them. */
export interface HelmRepository {
  id: string;
  url: string;
  authenticated: boolean;
  createdAt: string;
  updatedAt: string;
}

/** `https://charts.example.com/stable/` and `…/stable` are one repository. */
export function normalizedChartUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Creates the repository or replaces its credentials. */
export async function upsertHelmRepository(
  db: Kysely<Database>,
  box: SecretBox,
  input: { url: string; credentials?: HelmCredentials },
  now = new Date(),
): Promise<HelmRepository> {
  const time = now.toISOString();
  const url = normalizedChartUrl(input.url);
  // Bound to the URL, the key the upsert finds the row by (a new id is made only when there is no row yet).
  const sealed = input.credentials ? box.sealJson(input.credentials, credentialsPlace(url)) : null;
  await db
    .insertInto('helm_repositories')
    .values({ id: randomUUID(), url, credentials: sealed, created_at: time, updated_at: time })
    .onConflict((conflict) => conflict.column('url').doUpdateSet({ credentials: sealed, updated_at: time }))
    .execute();
  const row = await db.selectFrom('helm_repositories').selectAll().where('url', '=', url).executeTakeFirstOrThrow();
  return toHelmRepository(row);
}

export async function listHelmRepositories(db: Kysely<Database>): Promise<HelmRepository[]> {
  return (await db.selectFrom('helm_repositories').selectAll().orderBy('url').execute()).map(toHelmRepository);
}

/** @returns whether it existed. */
export async function deleteHelmRepository(db: Kysely<Database>, id: string): Promise<boolean> {
  const result = await db.deleteFrom('helm_repositories').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The credentials of the chart repository at `url`, if one was registered. */
export async function helmCredentialsFor(db: Kysely<Database>, box: SecretBox, url: string): Promise<HelmCredentials | undefined> {
  const row = await db.selectFrom('helm_repositories').select('credentials').where('url', '=', normalizedChartUrl(url)).executeTakeFirst();
  return row?.credentials ? box.openJson<HelmCredentials>(row.credentials, credentialsPlace(normalizedChartUrl(url))) : undefined;
}

/** Where a chart repository's credentials are sealed: its row, by its normalised URL. */
function credentialsPlace(url: string): SealContext {
  return { table: 'helm_repositories', column: 'credentials', row: url };
}

function toHelmRepository(row: Selectable<HelmRepositoryTable>): HelmRepository {
  return { id: row.id, url: row.url, authenticated: row.credentials !== null, createdAt: row.created_at, updatedAt: row.updated_at };
}
