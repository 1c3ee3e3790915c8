/**
 * The audit log: one row per mutating API request a user or token made (who, what, on what, when, and the
 * status answered, so refusals are there too). Written after the response; never holds a request's body.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export interface AuditEvent {
  id: string;
  /** ISO 8601. */
  at: string;
  /** `user:NAME`, `token:NAME`, or `anonymous` for a request without valid credentials. */
  actor: string;
  /** HTTP method and route pattern, e.g. `POST /v1/clusters/:cluster/services/:name/rollback`. */
  action: string;
  /** The request's path, e.g. `/v1/clusters/dev/services/web/rollback`. */
  target: string;
  status: number;
}

export async function recordAuditEvent(db: Kysely<Database>, event: Omit<AuditEvent, 'id'>): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({ id: randomUUID(), ...event })
    .execute();
}

/** The newest events first; `limit` at most. */
export async function listAuditEvents(db: Kysely<Database>, limit: number): Promise<AuditEvent[]> {
  return await db.selectFrom('audit_events').selectAll().orderBy('at', 'desc').orderBy('id').limit(limit).execute();
}
