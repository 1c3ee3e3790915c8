/**
 * Git repositories the fleet's services are sourced from (Plural's GitRepository): a URL, optional credentials
 * sealed with the server's key (the keys of a Kluctl git credentials Secret: `username`/`password` for HTTPS,
 * `identity`/`known_hosts` for SSH, `caFile`), and the health of the last fetch, PULLABLE or FAILED with its error.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import type { Database, GitRepositoryTable } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';

export type GitCredentials = Partial<Record<'username' | 'password' | 'identity' | 'known_hosts' | 'caFile', string>>;

export type RepositoryHealth = 'PULLABLE' | 'FAILED';

export interface Repository {
  id: string;
  url: string;
  /** How the server authenticates; the credentials themselves never leave the database unsealed. */
  auth: 'none' | 'basic' | 'ssh';
  /** null until the first fetch. */
  health: RepositoryHealth | null;
  lastError: string | null;
  pulledAt: string | null;
  createdAt: string;
}

/** @throws ConflictError when the URL is registered already. */
export async function createRepository(
  db: Kysely<Database>,
  box: SecretBox,
  input: { url: string; credentials?: GitCredentials },
  now = new Date(),
): Promise<Repository> {
  const time = now.toISOString();
  const id = randomUUID();
  const row: Selectable<GitRepositoryTable> = {
    id,
    url: input.url,
    credentials:
      input.credentials && Object.keys(input.credentials).length > 0 ? box.sealJson(input.credentials, credentialsPlace(id)) : null,
    health: null,
    last_error: null,
    pulled_at: null,
    created_at: time,
    updated_at: time,
  };
  try {
    await db.insertInto('git_repositories').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError('repository', 'url', input.url);
    throw error;
  }
  return toRepository(row, input.credentials);
}

export async function listRepositories(db: Kysely<Database>, box: SecretBox): Promise<Repository[]> {
  const rows = await db.selectFrom('git_repositories').selectAll().orderBy('url').execute();
  return rows.map((row) => toRepository(row, openCredentials(box, row)));
}

/** By id or by URL. @throws NotFoundError */
export async function getRepository(db: Kysely<Database>, box: SecretBox, idOrUrl: string): Promise<Repository> {
  const row = await findRow(db, idOrUrl);
  return toRepository(row, openCredentials(box, row));
}

/** The repository's credentials in clear, for the server's own git fetches only. @throws NotFoundError */
export async function repositoryCredentials(db: Kysely<Database>, box: SecretBox, id: string): Promise<GitCredentials | undefined> {
  return openCredentials(box, await findRow(db, id));
}

/**
 * Forgets a repository no service uses.
 * @throws NotFoundError; ConflictError (field `services`) while services are sourced from it.
 */
export async function deleteRepository(db: Kysely<Database>, idOrUrl: string): Promise<void> {
  const row = await findRow(db, idOrUrl);
  const used = await db.selectFrom('services').select('name').where('repository_id', '=', row.id).limit(1).executeTakeFirst();
  const extra = await db.selectFrom('service_sources').select('service_id').where('repository_id', '=', row.id).limit(1).executeTakeFirst();
  if (used || extra) throw new ConflictError('service', 'repository', row.url);
  await db.deleteFrom('git_repositories').where('id', '=', row.id).execute();
}

/** Records the outcome of a fetch: PULLABLE, or FAILED with git's error (credentials never appear in it). */
export async function recordPull(db: Kysely<Database>, id: string, error: string | undefined, now = new Date()): Promise<void> {
  await db
    .updateTable('git_repositories')
    .set({
      health: error === undefined ? 'PULLABLE' : 'FAILED',
      last_error: error ?? null,
      pulled_at: now.toISOString(),
      updated_at: now.toISOString(),
    })
    .where('id', '=', id)
    .execute();
}

async function findRow(db: Kysely<Database>, idOrUrl: string): Promise<Selectable<GitRepositoryTable>> {
  const row = await db
    .selectFrom('git_repositories')
    .selectAll()
    .where((eb) => eb.or([eb('id', '=', idOrUrl), eb('url', '=', idOrUrl)]))
    .executeTakeFirst();
  if (!row) throw new NotFoundError('repository', idOrUrl);
  return row;
}

function openCredentials(box: SecretBox, row: Selectable<GitRepositoryTable>): GitCredentials | undefined {
  return row.credentials === null ? undefined : box.openJson<GitCredentials>(row.credentials, credentialsPlace(row.id));
}

/** Where a repository's credentials are sealed: its row, by id. */
function credentialsPlace(id: string): SealContext {
  return { table: 'git_repositories', column: 'credentials', row: id };
}

function toRepository(row: Selectable<GitRepositoryTable>, credentials: GitCredentials | undefined): Repository {
  const auth =
    credentials?.identity !== undefined
      ? 'ssh'
      : credentials?.username !== undefined || credentials?.password !== undefined
        ? 'basic'
        : 'none';
  return {
    id: row.id,
    url: row.url,
    auth,
    health: row.health as RepositoryHealth | null,
    lastError: row.last_error,
    pulledAt: row.pulled_at,
    createdAt: row.created_at,
  };
}
