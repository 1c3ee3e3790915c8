/**
 * Users who log in with a password. Passwords are hashed with argon2id (@node-rs/argon2, its default cost:
 * 19 MiB, 2 passes, as OWASP recommends) and kept only as the PHC string; groups are names role bindings match.
 * The first start of a server on a database without users makes `admin` with a random password, printed once,
 * as Argo CD does with its initial admin secret.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { hash, verify } from '@node-rs/argon2';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import { putRoleBinding } from './role-bindings.ts';
import { endUserSessions } from './sessions.ts';
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

/**
 * Changes a user's password and/or groups. A new password ends the user's sessions in the same transaction (all of
 * them, or all but `keepSession`, the cookie value of the session that changed its own password), so a session
 * someone else took over does not outlive the password it was opened with; API tokens stay, being credentials of
 * their own. @throws NotFoundError; Error for a short password.
 */
export async function updateUser(
  db: Kysely<Database>,
  name: string,
  change: { password?: string; groups?: string[] },
  keepSession?: string,
): Promise<User> {
  if (change.password !== undefined) checkPassword(change.password);
  const set = {
    ...(change.password === undefined ? {} : { password_hash: await hash(change.password) }),
    ...(change.groups === undefined ? {} : { groups: JSON.stringify(change.groups) }),
  };
  if (Object.keys(set).length > 0)
    await db.transaction().execute(async (tx) => {
      const row = await tx.updateTable('users').set(set).where('name', '=', name).returning('id').executeTakeFirst();
      if (row && change.password !== undefined) await endUserSessions(tx, row.id, keepSession);
    });
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
/**
 * Wrong passwords (for any names, unknown ones included) from one client address that lock that address's logins
 * for the same window: a client guessing one password across many users (password spraying, which the per-user
 * limit never sees) is held after 20, while an office behind one NAT still has room for its people's typos.
 * OWASP's Authentication Cheat Sheet asks for both limits.
 */
export const ADDRESS_FAILURE_LIMIT = 20;

/** Logins are refused for this user, or from this address, until `retryAt`, after too many wrong passwords. */
export class LoginLockedError extends Error {
  readonly retryAt: Date;

  /** @param subject `for NAME` or `from ADDRESS`. */
  constructor(subject: string, retryAt: Date) {
    super(`too many wrong passwords ${subject}: try again after ${retryAt.toISOString()}`);
    this.name = 'LoginLockedError';
    this.retryAt = retryAt;
  }
}

/**
 * The user when `password` is theirs, else undefined (an unknown name costs a hash as well, so timing does not tell
 * which names exist). LOGIN_FAILURE_LIMIT wrong passwords for a user, or ADDRESS_FAILURE_LIMIT from `address`
 * (request.ip; IPv6 counted by its /64, which one client usually holds whole), within LOGIN_FAILURE_WINDOW_MS lock
 * further logins of that user, or from that address, until the window has passed since the first of them; a right
 * password resets the user's count.
 *
 * Each attempt takes its place in both counts with one conditional UPDATE (an upsert for the address) before the
 * password is looked at, and gives it back when it turns out not to count. The database orders concurrent attempts
 * (SQLite has one writer; PostgreSQL re-checks the WHERE of an UPDATE that waited on the row's lock against the row
 * as committed), so N wrong passwords sent at once count as N sent one after another: LOGIN_FAILURE_LIMIT of them
 * get to a password check and the rest are refused, where reading the count and writing it back let them all through.
 * @throws LoginLockedError while the user or the address is locked, without looking at the password.
 */
export async function verifyUserPassword(
  db: Kysely<Database>,
  name: string,
  password: string,
  now = new Date(),
  address?: string,
): Promise<User | undefined> {
  const key = address === undefined ? undefined : addressKey(address);
  if (key !== undefined) await claimAddressAttempt(db, key, now);
  let counted = false;
  try {
    const row = await claimUserAttempt(db, name, now);
    if (!row) {
      const locked = await db.selectFrom('users').select('first_failed_at').where('name', '=', name).executeTakeFirst();
      if (locked) throw new LoginLockedError(`for ${name}`, lockEnd(locked.first_failed_at ?? now.toISOString()));
      await verify(await unknownUserHash(), password).catch(() => false);
      counted = true;
      return undefined;
    }
    const matches = await verify(row.password_hash, password).catch(() => false);
    if (matches) {
      await db.updateTable('users').set({ failed_logins: 0, first_failed_at: null }).where('id', '=', row.id).execute();
      return toUser(row);
    }
    counted = true;
    return undefined;
  } finally {
    // A locked user or a right password does not count against the address: only a password checked and wrong
    // (or a name that does not exist) does.
    if (key !== undefined && !counted) await releaseAddressAttempt(db, key);
  }
}

/** The user's row with one more attempt counted, or undefined when the user is locked or does not exist. */
async function claimUserAttempt(db: Kysely<Database>, name: string, now: Date) {
  const windowStart = new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS).toISOString();
  return await db
    .updateTable('users')
    .set((eb) => {
      // ISO-8601 UTC strings of one length order as the times they name, on SQLite's text and PostgreSQL's.
      const fresh = eb.or([eb('first_failed_at', 'is', null), eb('first_failed_at', '<=', windowStart)]);
      return {
        failed_logins: eb
          .case()
          .when(fresh)
          .then(1)
          .else(eb('failed_logins', '+', 1))
          .end(),
        first_failed_at: eb.case().when(fresh).then(now.toISOString()).else(eb.ref('first_failed_at')).end(),
      };
    })
    .where('name', '=', name)
    .where((eb) =>
      eb.or([eb('first_failed_at', 'is', null), eb('first_failed_at', '<=', windowStart), eb('failed_logins', '<', LOGIN_FAILURE_LIMIT)]),
    )
    .returning(['id', 'name', 'password_hash', 'groups', 'created_at'])
    .executeTakeFirst();
}

/** Counts one more attempt from `key`. @throws LoginLockedError when the address is locked. */
async function claimAddressAttempt(db: Kysely<Database>, key: string, now: Date): Promise<void> {
  const windowStart = new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS).toISOString();
  // Rows whose window has passed say nothing any more; clearing them here keeps the table small without a timer.
  await db.deleteFrom('login_addresses').where('first_failed_at', '<=', windowStart).execute();
  const claimed = await db
    .insertInto('login_addresses')
    .values({ address: key, failed_logins: 1, first_failed_at: now.toISOString() })
    .onConflict((conflict) =>
      conflict
        .column('address')
        .doUpdateSet((eb) => {
          const fresh = eb('login_addresses.first_failed_at', '<=', windowStart);
          return {
            failed_logins: eb
              .case()
              .when(fresh)
              .then(1)
              .else(eb('login_addresses.failed_logins', '+', 1))
              .end(),
            first_failed_at: eb.case().when(fresh).then(now.toISOString()).else(eb.ref('login_addresses.first_failed_at')).end(),
          };
        })
        .where((eb) =>
          eb.or([
            eb('login_addresses.first_failed_at', '<=', windowStart),
            eb('login_addresses.failed_logins', '<', ADDRESS_FAILURE_LIMIT),
          ]),
        ),
    )
    .returning('address')
    .executeTakeFirst();
  if (claimed) return;
  const locked = await db.selectFrom('login_addresses').select('first_failed_at').where('address', '=', key).executeTakeFirst();
  throw new LoginLockedError(`from ${key}`, lockEnd(locked?.first_failed_at ?? now.toISOString()));
}

async function releaseAddressAttempt(db: Kysely<Database>, key: string): Promise<void> {
  await db
    .updateTable('login_addresses')
    .set((eb) => ({ failed_logins: eb('failed_logins', '-', 1) }))
    .where('address', '=', key)
    .where('failed_logins', '>', 0)
    .execute();
}

function lockEnd(firstFailedAt: string): Date {
  return new Date(Date.parse(firstFailedAt) + LOGIN_FAILURE_WINDOW_MS);
}

/**
 * What the address limit counts by: an IPv4 address as it is (also when written IPv4-mapped, ::ffff:a.b.c.d), an
 * IPv6 address by its /64 (`2001:db8:1:2::/64`), the smallest block a provider hands one subscriber (RFC 6177), so a
 * client cannot step around the limit by changing the interface identifier.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIPv6(address)) return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
  return address;
}

/** The eight groups of an IPv6 address, without leading zeros (`::` expanded, a dotted IPv4 tail kept as two groups). */
function expandIpv6(address: string): string[] {
  const withoutZone = address.split('%')[0]!.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(withoutZone);
  const text = dotted
    ? withoutZone.slice(0, dotted.index) +
      [(Number(dotted[1]) << 8) | Number(dotted[2]), (Number(dotted[3]) << 8) | Number(dotted[4])].map((n) => n.toString(16)).join(':')
    : withoutZone;
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
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
