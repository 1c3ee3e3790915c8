/**
 * Notification sinks and routers (Plural's NotificationSink and NotificationRouter): a sink is where a message goes
 * (a Slack incoming webhook, or a generic webhook signed with an HMAC key), its address and key sealed with the
 * server's key and never returned; a router sends the fleet events it names (`service.update`, `cluster.create`,
 * `cluster.delete`, or `*`) that pass its filters to its sinks.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { NotFoundError } from './errors.ts';
import type { Database, NotificationRouterTable, NotificationSinkTable } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';

export type SinkType = 'slack' | 'teams' | 'webhook';

/** Where a sink posts; sealed in the database. */
export interface SinkConfiguration {
  url: string;
  /** Generic webhooks: the body is signed with it (`X-Signature: sha256=<hex HMAC-SHA256>`). */
  hmacKey?: string;
}

/** A sink as readers see it: no address, no key. */
export interface NotificationSink {
  id: string;
  name: string;
  type: SinkType;
  createdAt: string;
  updatedAt: string;
}

/** An event passes a filter when every field given matches; a router without filters passes every event. */
export interface RouterFilter {
  clusterId?: string;
  serviceId?: string;
  /** JavaScript regular expression over `<cluster name>/<service name>` (or the cluster name for cluster events). */
  regex?: string;
}

export interface NotificationRouter {
  id: string;
  name: string;
  events: string[];
  filters: RouterFilter[];
  /** Sink names. */
  sinks: string[];
  createdAt: string;
  updatedAt: string;
}

/** Creates the sink or replaces its type and configuration. */
export async function upsertSink(
  db: Kysely<Database>,
  box: SecretBox,
  sink: { name: string; type: SinkType; configuration: SinkConfiguration },
  now = new Date(),
): Promise<NotificationSink> {
  const time = now.toISOString();
  // Bound to the name, the key the upsert finds the row by (a new id is made only when there is no row yet).
  const sealed = box.sealJson(sink.configuration, configurationPlace(sink.name));
  await db
    .insertInto('notification_sinks')
    .values({ id: randomUUID(), name: sink.name, type: sink.type, configuration: sealed, created_at: time, updated_at: time })
    .onConflict((conflict) => conflict.column('name').doUpdateSet({ type: sink.type, configuration: sealed, updated_at: time }))
    .execute();
  return await getSink(db, sink.name);
}

export async function listSinks(db: Kysely<Database>): Promise<NotificationSink[]> {
  return (await db.selectFrom('notification_sinks').selectAll().orderBy('name').execute()).map(toSink);
}

/** @throws NotFoundError */
export async function getSink(db: Kysely<Database>, name: string): Promise<NotificationSink> {
  const row = await db.selectFrom('notification_sinks').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('notification sink', name);
  return toSink(row);
}

/** The sinks of these names with their configuration opened, for delivery only. */
export async function sinksForDelivery(
  db: Kysely<Database>,
  box: SecretBox,
  names: readonly string[],
): Promise<Array<NotificationSink & { configuration: SinkConfiguration }>> {
  if (names.length === 0) return [];
  const rows = await db
    .selectFrom('notification_sinks')
    .selectAll()
    .where('name', 'in', [...names])
    .execute();
  return rows.map((row) => ({
    ...toSink(row),
    configuration: box.openJson<SinkConfiguration>(row.configuration, configurationPlace(row.name)),
  }));
}

/** Where a sink's configuration is sealed: its row, by name. */
function configurationPlace(name: string): SealContext {
  return { table: 'notification_sinks', column: 'configuration', row: name };
}

/** @returns whether it existed. */
export async function deleteSink(db: Kysely<Database>, name: string): Promise<boolean> {
  const result = await db.deleteFrom('notification_sinks').where('name', '=', name).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Creates the router or replaces its events, filters and sinks. */
export async function upsertRouter(
  db: Kysely<Database>,
  router: { name: string; events: string[]; filters: RouterFilter[]; sinks: string[] },
  now = new Date(),
): Promise<NotificationRouter> {
  const time = now.toISOString();
  const fields = { events: JSON.stringify(router.events), filters: JSON.stringify(router.filters), sinks: JSON.stringify(router.sinks) };
  await db
    .insertInto('notification_routers')
    .values({ id: randomUUID(), name: router.name, ...fields, created_at: time, updated_at: time })
    .onConflict((conflict) => conflict.column('name').doUpdateSet({ ...fields, updated_at: time }))
    .execute();
  return await getRouter(db, router.name);
}

export async function listRouters(db: Kysely<Database>): Promise<NotificationRouter[]> {
  return (await db.selectFrom('notification_routers').selectAll().orderBy('name').execute()).map(toRouter);
}

/** @throws NotFoundError */
export async function getRouter(db: Kysely<Database>, name: string): Promise<NotificationRouter> {
  const row = await db.selectFrom('notification_routers').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('notification router', name);
  return toRouter(row);
}

/** @returns whether it existed. */
export async function deleteRouter(db: Kysely<Database>, name: string): Promise<boolean> {
  const result = await db.deleteFrom('notification_routers').where('name', '=', name).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

function toSink(row: Selectable<NotificationSinkTable>): NotificationSink {
  return { id: row.id, name: row.name, type: row.type as SinkType, createdAt: row.created_at, updatedAt: row.updated_at };
}

function toRouter(row: Selectable<NotificationRouterTable>): NotificationRouter {
  return {
    id: row.id,
    name: row.name,
    events: JSON.parse(row.events) as string[],
    filters: JSON.parse(row.filters) as RouterFilter[],
    sinks: JSON.parse(row.sinks) as string[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
