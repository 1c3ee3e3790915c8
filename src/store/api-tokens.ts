/**
 * API tokens (their form: crypto/tokens.ts), each shown once: a token either has a role of its own over everything
 * (the first admin token the server makes at first start, as Argo CD and Plural print their first admin credentials,
 * and tokens an installer hands to an operator), or acts as a user, with that user's role bindings.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Role } from '../rights.ts';
import type { Database } from './schema.ts';
import { API_TOKEN_PREFIX, hashToken, isApiTokenForm, newApiToken } from '../crypto/tokens.ts';

/** The token's own role (see rights.ts), or the user it acts as. */
export type ApiIdentity = { id: string; name: string } & ({ role: Role; userId?: undefined } | { role?: undefined; userId: string });

/** Makes a token for `name` with `role`; returns its only copy. */
export async function createApiToken(db: Kysely<Database>, name: string, role: Role, now = new Date()): Promise<string> {
  const token = newApiToken();
  await db
    .insertInto('api_tokens')
    .values(tokenRow(randomUUID(), name, { role }, token, now))
    .execute();
  return token;
}

/** Makes a token named `name` that acts as the user; returns its only copy. */
export async function createUserToken(db: Kysely<Database>, userId: string, name: string, now = new Date()): Promise<string> {
  const token = newApiToken();
  await db
    .insertInto('api_tokens')
    .values(tokenRow(randomUUID(), name, { userId }, token, now))
    .execute();
  return token;
}

/** The first admin token's id, the same on every replica, so replicas starting together on an empty database make one. */
const FIRST_ADMIN_ID = 'first-admin';

/**
 * Makes the first admin token when the database has no API token at all: `given` (a declarative install hands the
 * same token to the server and its operator) or a new one.
 * @returns the token, or undefined when tokens exist already or another replica made it first (later starts
 *   print nothing).
 * @throws Error when `given` is not a Gantry API token (`gantry-api-` and at least 32 more characters).
 */
export async function ensureAdminToken(db: Kysely<Database>, now = new Date(), given?: string): Promise<string | undefined> {
  if (given !== undefined && !isApiTokenForm(given))
    throw new Error(`the admin token must be ${API_TOKEN_PREFIX} followed by at least 32 letters, digits, - or _`);
  const existing = await db.selectFrom('api_tokens').select('id').limit(1).executeTakeFirst();
  if (existing) return undefined;
  const token = given ?? newApiToken();
  const inserted = await db
    .insertInto('api_tokens')
    .values(tokenRow(FIRST_ADMIN_ID, 'admin', { role: 'admin' }, token, now))
    .onConflict((conflict) => conflict.column('id').doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0 ? token : undefined;
}

/** A token with a role of its own, or (role '') one acting as the user `userId`. */
function tokenRow(id: string, name: string, owner: { role: Role } | { userId: string }, token: string, now: Date) {
  const [role, userId] = 'role' in owner ? [owner.role, null] : ['', owner.userId];
  return { id, name, token_hash: hashToken(token), role, created_at: now.toISOString(), revoked_at: null, user_id: userId };
}

/** Who a token belongs to, or undefined for an unknown or revoked one. */
export async function identityForApiToken(db: Kysely<Database>, token: string): Promise<ApiIdentity | undefined> {
  if (!token.startsWith(API_TOKEN_PREFIX)) return undefined;
  const row = await db
    .selectFrom('api_tokens')
    .select(['id', 'name', 'role', 'user_id'])
    .where('token_hash', '=', hashToken(token))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  return row.user_id === null
    ? { id: row.id, name: row.name, role: row.role as Role }
    : { id: row.id, name: row.name, userId: row.user_id };
}
