/**
 * Browser sessions: a random cookie value (256 bits) whose SHA-256 is the row's key, tied to a user and ending
 * after a fixed lifetime (no sliding renewal: a stolen cookie is good for at most that long). Logging out, a new
 * password or deleting the user ends it at once.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { hashToken, newToken } from '../crypto/tokens.ts';

const SESSION_PREFIX = 'gantry-session-';

/** Starts a session for the user; returns the cookie value (its only copy). */
export async function createSession(db: Kysely<Database>, userId: string, lifetimeMs: number, now = new Date()): Promise<string> {
  const value = newToken(SESSION_PREFIX);
  await db
    .insertInto('sessions')
    .values({
      id_hash: hashToken(value),
      user_id: userId,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + lifetimeMs).toISOString(),
    })
    .execute();
  // Expired rows are of no use to anyone; clearing them here keeps the table small without a timer.
  await db.deleteFrom('sessions').where('expires_at', '<', now.toISOString()).execute();
  return value;
}

/** The user id of a live session, or undefined for an unknown, ended or expired one. */
export async function sessionUser(db: Kysely<Database>, value: string, now = new Date()): Promise<string | undefined> {
  if (!value.startsWith(SESSION_PREFIX)) return undefined;
  const row = await db
    .selectFrom('sessions')
    .select('user_id')
    .where('id_hash', '=', hashToken(value))
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return row?.user_id;
}

export async function endSession(db: Kysely<Database>, value: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', hashToken(value)).execute();
}

/**
 * Ends every session of the user but `except` (a cookie value: the session that changed its own password stays, as
 * OWASP's Session Management Cheat Sheet asks of a password change). Give it the caller's transaction, so the end
 * of the sessions commits with the change that called for it.
 */
export async function endUserSessions(db: Kysely<Database>, userId: string, except?: string): Promise<void> {
  let query = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (except !== undefined) query = query.where('id_hash', '!=', hashToken(except));
  await query.execute();
}
