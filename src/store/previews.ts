/**
 * Previews (issue 43, part 1): what a pending change would do to a service's cluster, as the service's agent finds
 * with a server-side dry run against the live cluster. A change is a source at another ref (a user's request), a
 * pipeline edge's pending promotion (the target at its source's commit, with the copied configuration), or a global
 * service's template edit (each copy at the new template). The server makes a PENDING row and kicks the agent; the
 * agent reports the result (objects to create, change with their diff, delete; render or admission errors), which
 * makes it DONE, or FAILED with the error.
 *
 * A preview is good for (revision, live state): its `cacheKey` hashes the source digest, the spec, the values and the
 * service's live state as its agent last reported it, and a DONE preview with the same key is reused until it
 * expires (PREVIEW_TTL_MS). A PENDING preview no agent ran by then fails as expired. Rows a day past their expiry
 * are deleted.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';
import { NotFoundError } from './errors.ts';
import type { Database, PreviewTable } from './schema.ts';
import type { Service, ServiceSecrets, ServiceSpec } from './services.ts';

export type PreviewState = 'PENDING' | 'DONE' | 'FAILED';

/** How long a preview is good for: a DONE one is reused until then, a PENDING one fails then. */
export const PREVIEW_TTL_MS = 10 * 60_000;
/** Rows this long past their expiry are deleted. */
const KEEP_MS = 24 * 60 * 60_000;

export interface Preview {
  id: string;
  serviceId: string;
  clusterId: string;
  ref: string;
  commit: string;
  digest: string;
  spec: ServiceSpec;
  state: PreviewState;
  result: unknown;
  requestedBy: string;
  /** See PreviewTable.origin; null for a user's preview at a ref. */
  origin: string | null;
  /** Whether the preview renders with values of its own (a promotion's copied configuration, a template's). */
  hasValues: boolean;
  createdAt: string;
  finishedAt: string | null;
  expiresAt: string;
}

export interface NewPreview extends Pick<Preview, 'serviceId' | 'clusterId' | 'ref' | 'commit' | 'digest' | 'spec' | 'requestedBy'> {
  /** The values to render with instead of the service's own. */
  values?: ServiceSecrets;
  origin?: string;
  /** previewKey(…) of what it renders; a DONE preview with the same key is returned instead of a new one. */
  cacheKey: string;
}

/**
 * The cache key of a preview of `service` at `digest` with `spec` and `values`: it changes with the source, the spec,
 * the values, and the live state its agent last reported (the applied revision and each object's state and drift).
 */
export function previewKey(
  service: Pick<Service, 'id' | 'appliedRevisionId' | 'components'>,
  digest: string,
  spec: ServiceSpec,
  values: ServiceSecrets | null,
): string {
  const live = { applied: service.appliedRevisionId, components: service.components };
  return createHash('sha256')
    .update(JSON.stringify([service.id, digest, spec, values, live]))
    .digest('hex');
}

/**
 * A DONE preview with the key that has not expired (for another origin, a copy of it with that origin), or a new
 * PENDING one.
 * @returns the preview, and whether it is new and PENDING (its agent is to run it).
 */
export async function createPreview(
  db: Kysely<Database>,
  box: SecretBox,
  preview: NewPreview,
  now = new Date(),
): Promise<{ preview: Preview; created: boolean }> {
  const reused = await db
    .selectFrom('previews')
    .selectAll()
    .where('cache_key', '=', preview.cacheKey)
    .where('state', '=', 'DONE')
    .where('expires_at', '>', now.toISOString())
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (reused && reused.origin === (preview.origin ?? null)) return { preview: toPreview(reused), created: false };
  const id = randomUUID();
  if (reused) {
    // Another origin asks for what was previewed already: it gets its own row with that result, as good as long.
    const copy = { ...reused, id, origin: preview.origin ?? null, requested_by: preview.requestedBy, sealed_values: null };
    await db.insertInto('previews').values(copy).execute();
    return { preview: toPreview(copy), created: false };
  }
  const row: Selectable<PreviewTable> = {
    id,
    service_id: preview.serviceId,
    cluster_id: preview.clusterId,
    ref: preview.ref,
    commit_sha: preview.commit,
    digest: preview.digest,
    spec: JSON.stringify(preview.spec),
    state: 'PENDING',
    result: null,
    requested_by: preview.requestedBy,
    created_at: now.toISOString(),
    finished_at: null,
    sealed_values: preview.values ? box.sealJson(preview.values, valuesPlace(id)) : null,
    origin: preview.origin ?? null,
    cache_key: preview.cacheKey,
    expires_at: new Date(now.getTime() + PREVIEW_TTL_MS).toISOString(),
  };
  await db.insertInto('previews').values(row).execute();
  return { preview: toPreview(row), created: true };
}

/** @throws NotFoundError */
export async function getPreview(db: Kysely<Database>, id: string): Promise<Preview> {
  const row = await db.selectFrom('previews').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('preview', id);
  return toPreview(row);
}

/** The values a preview renders with, in clear (for its agent only); undefined: the service's own. */
export async function previewValues(db: Kysely<Database>, box: SecretBox, id: string): Promise<ServiceSecrets | undefined> {
  const row = await db.selectFrom('previews').select('sealed_values').where('id', '=', id).executeTakeFirst();
  return row?.sealed_values ? box.openJson<ServiceSecrets>(row.sealed_values, valuesPlace(id)) : undefined;
}

/** The previews of a cluster its agent has still to run, oldest first. */
export async function pendingPreviews(db: Kysely<Database>, clusterId: string): Promise<Preview[]> {
  const rows = await db
    .selectFrom('previews')
    .selectAll()
    .where('cluster_id', '=', clusterId)
    .where('state', '=', 'PENDING')
    .orderBy('created_at')
    .execute();
  return rows.map(toPreview);
}

/** The PENDING preview of the service with that source digest, whose tarball its agent may download like a revision's. */
export async function pendingPreviewOf(db: Kysely<Database>, serviceId: string, digest: string): Promise<Preview | undefined> {
  const row = await db
    .selectFrom('previews')
    .selectAll()
    .where('service_id', '=', serviceId)
    .where('digest', '=', digest)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  return row ? toPreview(row) : undefined;
}

/** The previews an origin asked for (see PreviewTable.origin), newest first. */
export async function previewsOf(db: Kysely<Database>, origin: string): Promise<Preview[]> {
  const rows = await db.selectFrom('previews').selectAll().where('origin', '=', origin).orderBy('created_at', 'desc').execute();
  return rows.map(toPreview);
}

/** Records the agent's result. @returns false when the preview is not PENDING any more (or gone). */
export async function finishPreview(
  db: Kysely<Database>,
  id: string,
  outcome: { state: 'DONE' | 'FAILED'; result: unknown },
  now = new Date(),
): Promise<boolean> {
  const updated = await db
    .updateTable('previews')
    .set({ state: outcome.state, result: JSON.stringify(outcome.result), finished_at: now.toISOString() })
    .where('id', '=', id)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

/**
 * Fails the PENDING previews past their expiry (their agent never ran them) and deletes rows a day past it.
 * @returns the previews it failed.
 */
export async function expirePreviews(db: Kysely<Database>, now = new Date()): Promise<Preview[]> {
  const expired = await db
    .selectFrom('previews')
    .selectAll()
    .where('state', '=', 'PENDING')
    .where('expires_at', '<=', now.toISOString())
    .execute();
  const failed: Preview[] = [];
  for (const row of expired) {
    const result = {
      create: [],
      change: [],
      delete: [],
      errors: [`expired: the cluster's agent did not run it within ${PREVIEW_TTL_MS / 60_000} minutes`],
    };
    if (await finishPreview(db, row.id, { state: 'FAILED', result }, now)) failed.push(toPreview(row));
  }
  await db
    .deleteFrom('previews')
    .where('expires_at', '<=', new Date(now.getTime() - KEEP_MS).toISOString())
    .execute();
  return failed;
}

function valuesPlace(id: string): SealContext {
  return { table: 'previews', column: 'sealed_values', row: id };
}

function toPreview(row: Selectable<PreviewTable>): Preview {
  return {
    id: row.id,
    serviceId: row.service_id,
    clusterId: row.cluster_id,
    ref: row.ref,
    commit: row.commit_sha,
    digest: row.digest,
    spec: JSON.parse(row.spec) as ServiceSpec,
    state: row.state as PreviewState,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    requestedBy: row.requested_by,
    origin: row.origin,
    hasValues: row.sealed_values !== null,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    expiresAt: row.expires_at,
  };
}
