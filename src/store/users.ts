/**
 * Users who log in with a password. Passwords are hashed with argon2id (@node-rs/argon2, its default cost:
 * 19 MiB, 2 passes, as OWASP recommends) and kept only as the PHC string; groups are names role bindings match.
 * The first start of a server on a database without users makes `admin` with a random password, printed once,
 * as Argo CD does with its initial admin secret.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import { putRoleBinding } from './role-bindings.ts';
import type { Database } from './schema.ts';

export interface User {
  id: string;
  name: string;
  groups: string[];
  createdAt: string;
}

/** Passwords shorter than this are refused (NIST SP 800-63B's minimum for chosen secrets). */
export const MIN_PASSWORD_LENGTH = 8;

/** @throws ConflictError when the name is taken; Error when the password is shorter than MIN_PASSWORD_LENGTH. */
export async function createUser(
  db: Kysely<Database>,
  input: { name: string; password: string; groups?: string[] },
  now = new Date(),
): Promise<User> {
  checkPassword(input.password);
  const row = {
    id: randomUUID(),
    name: input.name,
    password_hash: await hash(input.password),
    groups: JSON.stringify(input.groups ?? []),
    created_at: now.toISOString(),
  };
  try {
    await db.insertInto('users').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError('user', 'name', input.name);
    throw error;
  }
  return toUser(row);
}

/** Changes a user's password and/or groups. @throws NotFoundError; Error for a short password. */
export async function updateUser(db: Kysely<Database>, name: string, change: { password?: string; groups?: string[] }): Promise<User> {
  if (change.password !== undefined) checkPassword(change.password);
  const set = {
    ...(change.password === undefined ? {} : { password_hash: await hash(change.password) }),
    ...(change.groups === undefined ? {} : { groups: JSON.stringify(change.groups) }),
  };
  if (Object.keys(set).length > 0) await db.updateTable('users').set(set).where('name', '=', name).execute();
  return await getUser(db, name);
}

/** @throws NotFoundError */
export async function getUser(db: Kysely<Database>, name: string): Promise<User> {
  const row = await db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('user', name);
  return toUser(row);
}

export async function getUserById(db: Kysely<Database>, id: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

export async function listUsers(db: Kysely<Database>): Promise<User[]> {
  return (await db.selectFrom('users').selectAll().orderBy('name').execute()).map(toUser);
}

/** Deletes the user, their sessions and their tokens. @throws NotFoundError */
export async function deleteUser(db: Kysely<Database>, name: string): Promise<void> {
  const user = await getUser(db, name);
  await db.transaction().execute(async (tx) => {
    await tx.updateTable('api_tokens').set({ revoked_at: new Date().toISOString() }).where('user_id', '=', user.id).execute();
    await tx.deleteFrom('sessions').where('user_id', '=', user.id).execute();
    await tx.deleteFrom('users').where('id', '=', user.id).execute();
  });
}

/** Wrong passwords that lock a user's logins, and the window they count in: Argo CD's defaults (5 in 300 s). */
export const LOGIN_FAILURE_LIMIT = 5;
export const LOGIN_FAILURE_WINDOW_MS = 300_000;

/** Logins are refused for this user until `retryAt`, after too many wrong passwords. */
export class LoginLockedError extends Error {
  readonly retryAt: Date;

  constructor(name: string, retryAt: Date) {
    super(`too many wrong passwords for ${name}: try again after ${retryAt.toISOString()}`);
    this.name = 'LoginLockedError';
    this.retryAt = retryAt;
  }
}

/**
 * The user when `password` is theirs, else undefined (an unknown name costs a hash as well, so timing does not tell
 * which names exist). LOGIN_FAILURE_LIMIT wrong passwords within LOGIN_FAILURE_WINDOW_MS lock the user's logins
 * until the window has passed since the first of them; a right password resets the count.
 * @throws LoginLockedError while locked, without looking at the password.
 */
export async function verifyUserPassword(
  db: Kysely<Database>,
  name: string,
  password: string,
  now = new Date(),
): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
  const windowStart = row?.first_failed_at ? Date.parse(row.first_failed_at) : undefined;
  const inWindow = windowStart !== undefined && now.getTime() - windowStart < LOGIN_FAILURE_WINDOW_MS;
  if (row && inWindow && row.failed_logins >= LOGIN_FAILURE_LIMIT)
    throw new LoginLockedError(name, new Date(windowStart! + LOGIN_FAILURE_WINDOW_MS));
  const matches = await verify(row?.password_hash ?? (await unknownUserHash()), password).catch(() => false);
  if (!row) return undefined;
  if (matches) {
    if (row.failed_logins > 0)
      await db.updateTable('users').set({ failed_logins: 0, first_failed_at: null }).where('id', '=', row.id).execute();
    return toUser(row);
  }
  await db
    .updateTable('users')
    .set(inWindow ? { failed_logins: row.failed_logins + 1 } : { failed_logins: 1, first_failed_at: now.toISOString() })
    .where('id', '=', row.id)
    .execute();
  return undefined;
}

/** The name of the user made at first start. */
export const FIRST_ADMIN_USER = 'admin';

/**
 * Makes the `admin` user with `given` or a random password, bound to the admin role everywhere (binding `admin`),
 * when the database has no user at all.
 * @returns the password when this call made the user (to print once), else undefined.
 */
export async function ensureAdminUser(db: Kysely<Database>, given?: string, now = new Date()): Promise<string | undefined> {
  const existing = await db.selectFrom('users').select('id').limit(1).executeTakeFirst();
  if (existing) return undefined;
  const password = given ?? randomBytes(18).toString('base64url');
  try {
    await createUser(db, { name: FIRST_ADMIN_USER, password }, now);
    await putRoleBinding(db, FIRST_ADMIN_USER, { role: 'admin', subjects: [{ kind: 'user', name: FIRST_ADMIN_USER }], scope: 'all' }, now);
  } catch (error) {
    // Another replica starting on the same empty database made it first.
    if (error instanceof ConflictError) return undefined;
    throw error;
  }
  return password;
}

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new Error(`a password needs at least ${MIN_PASSWORD_LENGTH} characters`);
}

let unknownUserHashOnce: Promise<string> | undefined;

/** A hash of a random password, verified against when the name is unknown. */
function unknownUserHash(): Promise<string> {
  unknownUserHashOnce ??= hash(randomBytes(16).toString('base64url'));
  return unknownUserHashOnce;
}

function toUser(row: { id: string; name: string; groups: string; created_at: string }): User {
  return { id: row.id, name: row.name, groups: JSON.parse(row.groups) as string[], createdAt: row.created_at };
}
