/**
 * Service contexts (Plural's ServiceContext): named JSON configuration shared by many services, e.g. the outputs of
 * infrastructure (a VPC id, a bucket name) that every service of a region needs. Services bind contexts by name
 * (`contexts` in their spec); their agents get each bound context's configuration and Liquid templates read it as
 * `contexts.<name>`. The configuration is stored as plain JSON: it is not secret, and readers may read it (secrets
 * belong in a service's sealed configuration).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { NotFoundError } from './errors.ts';
import type { Database, ServiceContextTable } from './schema.ts';
import type { ServiceSpec } from './services.ts';

export type ContextConfiguration = Record<string, unknown>;

export interface ServiceContext {
  id: string;
  name: string;
  configuration: ContextConfiguration;
  createdAt: string;
  updatedAt: string;
}

/** A service or global-service template that binds a context. */
export interface ContextBinding {
  kind: 'service' | 'globalservice';
  id: string;
  /** `cluster/service` for a service, the global service's name for a template. */
  name: string;
}

/**
 * Creates the context, or replaces its configuration.
 * @returns the context, and whether its configuration changed (false for an identical upsert).
 */
export async function upsertServiceContext(
  db: Kysely<Database>,
  name: string,
  configuration: ContextConfiguration,
  now = new Date(),
): Promise<{ context: ServiceContext; created: boolean; changed: boolean }> {
  const time = now.toISOString();
  const json = JSON.stringify(configuration);
  const existing = await db.selectFrom('service_contexts').selectAll().where('name', '=', name).executeTakeFirst();
  if (existing && existing.configuration === json) return { context: toServiceContext(existing), created: false, changed: false };
  // One statement for both cases, so two writers of a new name cannot both insert it.
  await db
    .insertInto('service_contexts')
    .values({ id: randomUUID(), name, configuration: json, created_at: time, updated_at: time })
    .onConflict((conflict) => conflict.column('name').doUpdateSet({ configuration: json, updated_at: time }))
    .execute();
  return { context: await getServiceContext(db, name), created: existing === undefined, changed: true };
}

export async function listServiceContexts(db: Kysely<Database>): Promise<ServiceContext[]> {
  const rows = await db.selectFrom('service_contexts').selectAll().orderBy('name').execute();
  return rows.map(toServiceContext);
}

/** @throws NotFoundError */
export async function getServiceContext(db: Kysely<Database>, name: string): Promise<ServiceContext> {
  const row = await db.selectFrom('service_contexts').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('context', name);
  return toServiceContext(row);
}

/** @throws NotFoundError */
export async function deleteServiceContext(db: Kysely<Database>, name: string): Promise<void> {
  const deleted = await db.deleteFrom('service_contexts').where('name', '=', name).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw new NotFoundError('context', name);
}

/** Of `names`, those no context has, in the order given. */
export async function missingContexts(db: Kysely<Database>, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await db
    .selectFrom('service_contexts')
    .select('name')
    .where('name', 'in', [...names])
    .execute();
  const found = new Set(rows.map((row) => row.name));
  return names.filter((name) => !found.has(name));
}

/** The configuration of each named context that exists, by name (what an agent's templates see as `contexts`). */
export async function contextConfigurations(db: Kysely<Database>, names: readonly string[]): Promise<Record<string, ContextConfiguration>> {
  if (names.length === 0) return {};
  const rows = await db
    .selectFrom('service_contexts')
    .selectAll()
    .where('name', 'in', [...names])
    .execute();
  return Object.fromEntries(rows.map((row) => [row.name, JSON.parse(row.configuration) as ContextConfiguration]));
}

/**
 * The live services (not being deleted) and global-service templates that bind the context. Bindings live inside
 * the JSON of specs and templates, which both databases store as text, so they are filtered here.
 */
export async function contextBindings(db: Kysely<Database>, name: string): Promise<ContextBinding[]> {
  const [services, clusters, globals] = await Promise.all([
    db.selectFrom('services').select(['id', 'name', 'cluster_id', 'spec']).where('deleted_at', 'is', null).orderBy('name').execute(),
    db.selectFrom('clusters').select(['id', 'name']).execute(),
    db.selectFrom('global_services').select(['id', 'name', 'template']).orderBy('name').execute(),
  ]);
  const clusterNames = new Map(clusters.map((cluster) => [cluster.id, cluster.name]));
  const boundServices = services
    .filter((row) => bindsContext(JSON.parse(row.spec) as ServiceSpec, name))
    .map((row) => ({ kind: 'service' as const, id: row.id, name: `${clusterNames.get(row.cluster_id) ?? row.cluster_id}/${row.name}` }));
  const boundTemplates = globals
    .filter((row) => bindsContext(JSON.parse(row.template) as { contexts?: string[] }, name))
    .map((row) => ({ kind: 'globalservice' as const, id: row.id, name: row.name }));
  return [...boundServices, ...boundTemplates];
}

function bindsContext(spec: { contexts?: string[] }, name: string): boolean {
  return spec.contexts?.includes(name) ?? false;
}

function toServiceContext(row: Selectable<ServiceContextTable>): ServiceContext {
  return {
    id: row.id,
    name: row.name,
    configuration: JSON.parse(row.configuration) as ContextConfiguration,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
