/**
 * Global services (Plural's GlobalService): a service template kept on every cluster whose tags include the
 * global service's tags (and whose distro matches, when one is set), but those whose handle it ignores. The services it makes carry its id as owner;
 * fleet-planning.ts decides what a change adds and removes, and the server applies that plan.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import type { Database, GlobalServiceTable } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';
import type { ServiceSpec } from './services.ts';
import type { RolloutSpec } from '../api/rollouts.ts';

/** What each cluster's copy of the service is made from: its name, its spec (git or helm source) and configuration. */
export interface ServiceTemplate extends ServiceSpec {
  name: string;
  /** Sealed in the database (the template's other fields are not secret). */
  configuration?: Record<string, string>;
  /** Helm values that are secrets; sealed as the configuration is. */
  secretValues?: Record<string, unknown>;
}

/** The spec of each copy of the template (no empty contexts list: see ServiceSpec.contexts). */
export function templateSpec(template: ServiceTemplate): ServiceSpec {
  const { name: _name, configuration: _configuration, secretValues: _secretValues, contexts, ...spec } = template;
  return contexts && contexts.length > 0 ? { ...spec, contexts } : spec;
}

export interface GlobalService {
  id: string;
  name: string;
  tags: Record<string, string>;
  distro: string | null;
  template: ServiceTemplate;
  /** How new revisions reach the copies: wave by wave; null: all at once. */
  rollout: RolloutSpec | null;
  /** Handles of clusters that get no copy, whatever their tags (Plural's ignoreClusters). */
  ignoreClusters: string[];
  createdAt: string;
}

interface StoredTemplate extends Omit<ServiceTemplate, 'configuration' | 'secretValues'> {
  sealedConfiguration?: string;
  sealedSecretValues?: string;
}

/** What a new global service is made of (GlobalService's fields; distro, rollout and ignoreClusters may be left out). */
export interface NewGlobalService {
  name: string;
  tags: Record<string, string>;
  distro?: string;
  template: ServiceTemplate;
  rollout?: RolloutSpec | null;
  ignoreClusters?: string[];
}

/** @throws ConflictError when the name is taken. */
export async function createGlobalService(
  db: Kysely<Database>,
  box: SecretBox,
  input: NewGlobalService,
  now = new Date(),
): Promise<GlobalService> {
  const time = now.toISOString();
  const id = randomUUID();
  const row: Selectable<GlobalServiceTable> = {
    id,
    name: input.name,
    tags: JSON.stringify(input.tags),
    distro: input.distro ?? null,
    template: JSON.stringify(storedTemplate(box, id, input.template)),
    rollout: input.rollout ? JSON.stringify(input.rollout) : null,
    ignore_clusters: JSON.stringify(input.ignoreClusters ?? []),
    created_at: time,
    updated_at: time,
  };
  try {
    await db.insertInto('global_services').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError('global service', 'name', input.name);
    throw error;
  }
  return toGlobalService(box, row);
}

export async function listGlobalServices(db: Kysely<Database>, box: SecretBox): Promise<GlobalService[]> {
  const rows = await db.selectFrom('global_services').selectAll().orderBy('name').execute();
  return rows.map((row) => toGlobalService(box, row));
}

/** @throws NotFoundError */
export async function getGlobalService(db: Kysely<Database>, box: SecretBox, name: string): Promise<GlobalService> {
  const row = await db.selectFrom('global_services').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('global service', name);
  return toGlobalService(box, row);
}

/** @returns undefined when there is none with that id (deleted). */
export async function globalServiceById(db: Kysely<Database>, box: SecretBox, id: string): Promise<GlobalService | undefined> {
  const row = await db.selectFrom('global_services').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toGlobalService(box, row) : undefined;
}

export async function updateGlobalService(
  db: Kysely<Database>,
  box: SecretBox,
  global: GlobalService,
  now = new Date(),
): Promise<GlobalService> {
  await db
    .updateTable('global_services')
    .set({
      tags: JSON.stringify(global.tags),
      distro: global.distro,
      template: JSON.stringify(storedTemplate(box, global.id, global.template)),
      rollout: global.rollout ? JSON.stringify(global.rollout) : null,
      ignore_clusters: JSON.stringify(global.ignoreClusters),
      updated_at: now.toISOString(),
    })
    .where('id', '=', global.id)
    .execute();
  return await getGlobalService(db, box, global.name);
}

export async function deleteGlobalService(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('global_services').where('id', '=', id).execute();
}

/** Whether a cluster with these tags, distro and handle gets the global service. */
export function selects(
  global: Pick<GlobalService, 'tags' | 'distro' | 'ignoreClusters'>,
  cluster: { tags: Record<string, string>; distro: string | null; handle: string },
): boolean {
  if (global.ignoreClusters.includes(cluster.handle)) return false;
  if (global.distro !== null && global.distro !== cluster.distro) return false;
  return Object.entries(global.tags).every(([key, value]) => cluster.tags[key] === value);
}

/** Where a global service's template seals `field`: its row, by id, in the JSON column `template`. */
function templatePlace(id: string, field: 'configuration' | 'secretValues'): SealContext {
  return { table: 'global_services', column: `template.${field}`, row: id };
}

function storedTemplate(box: SecretBox, id: string, template: ServiceTemplate): StoredTemplate {
  const { configuration, secretValues, ...rest } = template;
  const sealed = (object: Record<string, unknown> | undefined, field: 'configuration' | 'secretValues') =>
    object && Object.keys(object).length > 0 ? box.sealJson(object, templatePlace(id, field)) : undefined;
  const sealedConfiguration = sealed(configuration, 'configuration');
  const sealedSecretValues = sealed(secretValues, 'secretValues');
  return { ...rest, ...(sealedConfiguration ? { sealedConfiguration } : {}), ...(sealedSecretValues ? { sealedSecretValues } : {}) };
}

function toGlobalService(box: SecretBox, row: Selectable<GlobalServiceTable>): GlobalService {
  const { sealedConfiguration, sealedSecretValues, ...stored } = JSON.parse(row.template) as StoredTemplate;
  const template: ServiceTemplate = {
    ...stored,
    ...(sealedConfiguration
      ? { configuration: box.openJson<Record<string, string>>(sealedConfiguration, templatePlace(row.id, 'configuration')) }
      : {}),
    ...(sealedSecretValues
      ? { secretValues: box.openJson<Record<string, unknown>>(sealedSecretValues, templatePlace(row.id, 'secretValues')) }
      : {}),
  };
  return {
    id: row.id,
    name: row.name,
    tags: JSON.parse(row.tags) as Record<string, string>,
    distro: row.distro,
    template,
    rollout: row.rollout === null ? null : (JSON.parse(row.rollout) as RolloutSpec),
    ignoreClusters: JSON.parse(row.ignore_clusters) as string[],
    createdAt: row.created_at,
  };
}
