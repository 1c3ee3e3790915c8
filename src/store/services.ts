/**
 * Services (Plural's ServiceDeployment): what one cluster runs from one source, and its immutable revisions. This
 * file creates, changes, reads and deletes services. Every change of a service's spec, configuration or secret
 * values, and every new commit of its ref, adds a revision (number, commit, tarball digest, spec, sealed
 * configuration and secret values, who, when); the service points at the newest, which is what its agent applies.
 * Revising a service in place and rolling it back are in revisions.ts; the agent's reports, which set the
 * service's components, errors, applied revision and status, in reports.ts.
 */
import type { CapiClusterSource } from '../capi/cluster-manifests.ts';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import pLimit from 'p-limit';
import { type Insertable, type Kysely, type RawBuilder, type Selectable, sql, type Transaction, type Updateable } from 'kysely';
import type { AgentSource, ComponentDrift, ComponentState, ServiceStatus } from '../api/services.ts';
import { inChunks, isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import type { Database, RevisionTable, ServiceTable } from './schema.ts';
import type { SealContext, SecretBox } from '../crypto/secret-box.ts';

/**
 * How the agent renders a service's folder; `auto` decides by the files it finds, as Plural does; `helm` is a
 * chart source, whose tarball the server builds as a Kluctl project around the pre-pulled chart.
 */
export type Renderer =
  | { kind: 'auto' }
  | { kind: 'raw' }
  | { kind: 'kustomize' }
  | { kind: 'helm' }
  | { kind: 'kluctl'; target?: string; args?: Record<string, unknown> };

/** A Helm chart as a service's source, as Plural's ServiceDeployment helm spec (url, chart, version, values, valuesFiles). */
export interface HelmSpec {
  /** A Helm repository (http:// or https://) or an OCI registry path (oci://host/path, the chart below it). */
  url: string;
  chart: string;
  /** An exact version, or a semver range resolved to the newest version matching it (Masterminds' rules, as Helm). */
  version: string;
  values?: Record<string, unknown>;
  /** Paths in the service's git folder, merged in order under `values`; only with `git`. */
  valuesFiles?: string[];
  /** The Helm release name (the API defaults it to the service's name). */
  release: string;
  /** Leave out the chart's hooks (Plural's ignoreHooks); stored only when true, so older specs compare equal. */
  ignoreHooks?: boolean;
  /** Leave out the chart's crds/ (Plural's ignoreCrds); stored only when true. */
  ignoreCrds?: boolean;
}

/**
 * What a revision fixes besides its commit: the source and how to render it. The source is a folder of a git
 * repository (`repositoryId` + `git`), a Helm chart (`helm`), or a chart whose valuesFiles come from git (all three).
 */
export interface ServiceSpec {
  namespace: string;
  repositoryId?: string;
  git?: { ref: string; folder: string };
  helm?: HelmSpec;
  renderer: Renderer;
  /**
   * Names of the service contexts bound into its templates. Absent rather than empty, so specs stored before
   * contexts existed compare equal to the same spec written now (an empty list would make a revision).
   */
  contexts?: string[];
  /** How the agent applies (Plural's syncConfig); absent for the defaults, for the same reason as contexts. */
  syncConfig?: SyncConfig;
  /** False: `*.liquid` files are not rendered (Plural's templated); absent for the default, true. */
  templated?: false;
  /** What its owners call this state of the service (Plural's version); absent when not given. */
  version?: string;
  /** A folder of its source holding its docs (Plural's docsPath); absent when not given. */
  docsPath?: string;
  /**
   * More git folders packed into its source at `path` (Plural's sources), after the service's own folder at the root;
   * only with `git`. Absent rather than empty, as contexts.
   */
  sources?: ExtraSource[];
  /** Folders of the combined source each rendered on its own, their objects applied together (Plural's renderers). */
  renderers?: PathRenderer[];
  /**
   * The cluster's own agent as its source instead of git or helm (server/agent-service.ts): the install's objects
   * for this image, server URL and token Secret, which the server renders into the tarball.
   */
  agent?: AgentSource;
  /**
   * A cluster the fleet makes through Cluster API as its source (server/provisioned-clusters.ts): the management
   * cluster's Cluster API objects for it (src/capi/cluster-manifests.ts), which the server renders into the tarball.
   */
  capi?: CapiClusterSource;
}

/** One of a service's extra git sources: `git.folder` of the repository at `git.ref`, packed at `path`. */
export interface ExtraSource {
  /** Folder of the combined source it is put in, relative, without `..`; '' for the root. */
  path: string;
  repositoryId: string;
  git: { ref: string; folder: string };
}

/**
 * A folder of the service's combined source and how the agent renders it (Plural's renderers: AUTO, RAW, KUSTOMIZE,
 * HELM for a chart in the folder). `helm` is for a chart: values over its valuesFiles (relative to the chart folder)
 * and the release name (default the service's name).
 */
export interface PathRenderer {
  path: string;
  kind: 'auto' | 'raw' | 'kustomize' | 'helm';
  helm?: { values?: Record<string, unknown>; valuesFiles?: string[]; release?: string };
}

/** Plural's syncConfig, as its agent reads it. */
export interface SyncConfig {
  /** Make the service's namespace when it is missing (default true). */
  createNamespace?: boolean;
  /** Put every namespaced object into the service's namespace, whatever its manifest says (default false). */
  enforceNamespace?: boolean;
  /** Labels and annotations of the namespace the agent makes or keeps. */
  namespaceMetadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  /** Fields of matching objects the agent leaves to the cluster (agent/diff-normalizers.ts). */
  diffNormalizers?: Array<{ kind?: string; name?: string; namespace?: string; backfill?: boolean; jsonPointers: string[] }>;
  /** False: drift is reported, not repaired (default true). */
  selfHeal?: boolean;
  /** The agent's full resync of the service, a Go duration (Plural's reconciliation.interval); absent: the agent's. */
  resyncInterval?: string;
}

export interface Component {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
  state: ComponentState;
  /** Why it is not RUNNING, as its agent's readiness rules say; absent when RUNNING or when they say nothing. */
  message?: string;
  synced: boolean;
  /** How it differs from what the agent applied, when it does. */
  drift?: ComponentDrift;
}

export interface ServiceError {
  source: string;
  message: string;
}

export interface Revision {
  id: string;
  number: number;
  commit: string | null;
  digest: string | null;
  /** The chart version a helm service's version resolved to. */
  chartVersion: string | null;
  /** The commit each of `spec.sources` resolved to, in their order; null without sources. */
  sourceCommits: string[] | null;
  spec: ServiceSpec;
  message: string | null;
  createdBy: string | null;
  createdAt: string;
}

export interface Service {
  id: string;
  clusterId: string;
  name: string;
  spec: ServiceSpec;
  dependencies: string[];
  protect: boolean;
  ownerId: string | null;
  status: ServiceStatus;
  errors: ServiceError[];
  revision: Revision;
  /** Set while a rollback pins the service at `revision` (who pinned it, when: ISO time); null otherwise. */
  pinned: Pin | null;
  /** The newest revision, when newer than `revision` (it waits for the pin's release); null otherwise. */
  pendingRevisionNumber: number | null;
  appliedRevisionId: string | null;
  /** The number of the applied revision, null before the agent's first report. */
  appliedRevisionNumber: number | null;
  components: Component[];
  deletedAt: string | null;
  createdAt: string;
}

export interface Pin {
  by: string;
  at: string;
}

export interface NewService {
  clusterId: string;
  name: string;
  spec: ServiceSpec;
  configuration?: Record<string, string>;
  /** Helm values that are secrets, sealed like the configuration. */
  secretValues?: Record<string, unknown>;
  dependencies?: string[];
  protect?: boolean;
  ownerId?: string | null;
}

/** What a new revision records: the source's resolved commit ('' without git), its tarball's digest, the chart version. */
export interface ResolvedSource {
  commit: string;
  digest: string;
  chartVersion?: string;
  /** The commit each of the spec's `sources` resolved to, in their order; absent without sources. */
  sourceCommits?: string[];
}

export interface Author {
  /** Who made the change (a token's name, `git` for a new commit, a global service's name). */
  by: string;
  message?: string;
}

/** @throws ConflictError when the cluster has a service of that name. */
export async function createService(
  db: Kysely<Database>,
  box: SecretBox,
  input: NewService,
  source: ResolvedSource,
  author: Author,
  now = new Date(),
): Promise<Service> {
  const time = now.toISOString();
  const id = randomUUID();
  try {
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('services')
        .values({
          id,
          cluster_id: input.clusterId,
          name: input.name,
          namespace: input.spec.namespace,
          repository_id: input.spec.repositoryId ?? null,
          spec: JSON.stringify(input.spec),
          configuration: sealObject(box, input.configuration, id, 'configuration'),
          secret_values: sealObject(box, input.secretValues, id, 'secret_values'),
          dependencies: JSON.stringify(input.dependencies ?? []),
          protect: input.protect ? 1 : 0,
          owner_id: input.ownerId ?? null,
          revision_id: null,
          status: 'stale',
          errors: '[]',
          applied_revision_id: null,
          deleted_at: null,
          created_at: time,
          updated_at: time,
        })
        .execute();
      await recordSourceRepositories(trx, [{ id, spec: input.spec }]);
      await addRevision(trx, id, source, author, time);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError('service', 'name', input.name);
    throw error;
  }
  return await getServiceById(db, id);
}

export interface ServiceChanges {
  spec?: ServiceSpec;
  /** Replaces the whole configuration. */
  configuration?: Record<string, string>;
  /** Replace all secret values ({} drops them). */
  secretValues?: Record<string, unknown>;
  dependencies?: string[];
  protect?: boolean;
}

/**
 * Applies `changes` and, when the spec, the configuration, the secret values or the source's commit changed, adds a
 * revision.
 * @returns the service, and whether a revision was added.
 * @throws NotFoundError when the service does not exist.
 */
export async function updateService(
  db: Kysely<Database>,
  box: SecretBox,
  serviceId: string,
  changes: ServiceChanges,
  source: ResolvedSource,
  author: Author,
  now = new Date(),
): Promise<{ service: Service; revised: boolean }> {
  const update = { serviceId, changes, source, author };
  const revised = await db.transaction().execute(async (trx) => (await changeServices(trx, box, [update], now.toISOString())).length > 0);
  // A missing service changed nothing; reading it throws NotFoundError.
  return { service: await getServiceById(db, serviceId), revised };
}

/** Which service, on which cluster: all a kick needs. */
export type ServiceRef = Pick<Service, 'id' | 'clusterId'>;

/** One service's part of updateServices. */
export interface ServiceUpdate {
  serviceId: string;
  changes: ServiceChanges;
  source: ResolvedSource;
  author: Author;
}

/** Services updateServices changes per transaction: short transactions, and kicks that start early. */
const UPDATES_PER_TRANSACTION = 200;

/**
 * Transactions of updateServices at once: on PostgreSQL one batch's round trips overlap another's (the batches hold
 * different services, so they take no lock the other waits for); SQLite runs them one after the other anyway.
 */
const CONCURRENT_TRANSACTIONS = 3;

/**
 * updateService for many services (a global service's copies, the services a commit moves), each at most once,
 * UPDATES_PER_TRANSACTION to a transaction of a few set-based queries, CONCURRENT_TRANSACTIONS of them at once: a
 * query per service would wait for its turn on a database and an event loop that thousands of agents' polls keep
 * busy. A service deleted since the caller listed it is left out.
 * @param onRevised called with each service that got a revision, once its batch is committed.
 * @returns how many services got a revision.
 */
export async function updateServices(
  db: Kysely<Database>,
  box: SecretBox,
  updates: readonly ServiceUpdate[],
  onRevised: (service: ServiceRef) => void,
  now = new Date(),
): Promise<number> {
  const limit = pLimit(CONCURRENT_TRANSACTIONS);
  const batches: Array<readonly ServiceUpdate[]> = [];
  for (let start = 0; start < updates.length; start += UPDATES_PER_TRANSACTION)
    batches.push(updates.slice(start, start + UPDATES_PER_TRANSACTION));
  // Settled, not raced: a failed batch's error is thrown once every other batch has committed or failed too.
  const outcomes = await Promise.allSettled(
    batches.map((batch) =>
      limit(async () => {
        const revised = await db.transaction().execute((trx) => changeServices(trx, box, batch, now.toISOString()));
        for (const service of revised) onRevised(service);
        return revised.length;
      }),
    ),
  );
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.reduce((sum, outcome) => sum + (outcome.status === 'fulfilled' ? outcome.value : 0), 0);
}

/**
 * The work of updateService for each of `updates` (at most IN_CHUNK, each service once) inside `trx`: every service
 * takes its changes, and one whose spec, configuration, secret values or source differ from its current revision
 * gets a new revision holding its new content. Services with the same new fields are written by one UPDATE, their
 * sealed values (each sealed for its own service) chosen by id inside it (perService).
 * @returns the services that got a revision.
 */
async function changeServices(
  trx: Transaction<Database>,
  box: SecretBox,
  updates: readonly ServiceUpdate[],
  time: string,
): Promise<ServiceRef[]> {
  const ids = updates.map((update) => update.serviceId);
  const rows = new Map((await trx.selectFrom('services').selectAll().where('id', 'in', ids).execute()).map((row) => [row.id, row]));
  if (rows.size === 0) return [];
  const newest = await newestRevisions(trx, [...rows.values()]);
  const writes = new Map<string, { fields: Updateable<ServiceTable>; sealed: Map<string, SealedWrites> }>();
  const revisions: Array<Insertable<RevisionTable>> = [];
  // Services whose spec is written (or has extra sources): their service_sources rows are written again.
  const respecified: Array<{ id: string; spec: ServiceSpec }> = [];
  for (const { serviceId, changes, source, author } of updates) {
    const row = rows.get(serviceId);
    if (!row) continue;
    // A pinned service's newest revision may wait beyond its current one: a change is measured against the newest.
    const current = newest.get(serviceId);
    if (!current) throw new Error(`service ${serviceId} has no revision`);
    const spec = JSON.stringify(changes.spec ?? JSON.parse(row.spec));
    const configurationChanged =
      changes.configuration !== undefined && !sameSealed(box, row.configuration, changes.configuration, row.id, 'configuration');
    const secretValuesChanged =
      changes.secretValues !== undefined && !sameSealed(box, row.secret_values, changes.secretValues, row.id, 'secret_values');
    const parsed = JSON.parse(spec) as ServiceSpec;
    const { namespace, repositoryId } = parsed;
    if (parsed.sources || spec !== row.spec) respecified.push({ id: serviceId, spec: parsed });
    const fields: Updateable<ServiceTable> = {
      spec,
      namespace,
      repository_id: repositoryId ?? null,
      ...(changes.dependencies ? { dependencies: JSON.stringify(changes.dependencies) } : {}),
      ...(changes.protect === undefined ? {} : { protect: changes.protect ? 1 : 0 }),
    };
    // Sealed for each service (a global service's copies each get their own): a sealed value is bound to its service.
    const sealed: SealedWrites = {
      ...(configurationChanged ? { configuration: sealObject(box, changes.configuration, row.id, 'configuration') } : {}),
      ...(secretValuesChanged ? { secret_values: sealObject(box, changes.secretValues, row.id, 'secret_values') } : {}),
    };
    const key = JSON.stringify([fields, Object.keys(sealed)]);
    const write = writes.get(key) ?? writes.set(key, { fields, sealed: new Map() }).get(key)!;
    write.sealed.set(serviceId, sealed);
    const changed =
      configurationChanged ||
      secretValuesChanged ||
      current.spec !== spec ||
      current.commit_sha !== (source.commit || null) ||
      current.digest !== source.digest ||
      current.chart_version !== (source.chartVersion ?? null) ||
      current.source_commits !== (source.sourceCommits ? JSON.stringify(source.sourceCommits) : null);
    if (!changed) continue;
    revisions.push(
      newRevision(serviceId, source, author, time, {
        spec,
        configuration: configurationChanged ? (sealed.configuration ?? null) : row.configuration,
        secretValues: secretValuesChanged ? (sealed.secret_values ?? null) : row.secret_values,
      }),
    );
  }
  for (const { fields, sealed } of writes.values())
    await trx
      .updateTable('services')
      .set({ ...fields, ...perService(sealed), updated_at: time })
      .where('id', 'in', [...sealed.keys()])
      .execute();
  await recordSourceRepositories(trx, respecified);
  if (revisions.length === 0) return [];
  await addRevisions(trx, revisions);
  return revisions.map((revision) => ({ id: revision.service_id, clusterId: rows.get(revision.service_id)!.cluster_id }));
}

/** The newest revision of each of `rows`: its current one, unless a pin holds it back (then one read for those). */
async function newestRevisions(
  trx: Transaction<Database>,
  rows: ReadonlyArray<Selectable<ServiceTable>>,
): Promise<Map<string, Selectable<RevisionTable>>> {
  const currentIds = rows.flatMap((row) => (row.revision_id === null || row.pinned !== null ? [] : [row.revision_id]));
  const pinnedIds = rows.filter((row) => row.pinned !== null).map((row) => row.id);
  // One after the other: a transaction has one connection.
  const currents = currentIds.length === 0 ? [] : await trx.selectFrom('revisions').selectAll().where('id', 'in', currentIds).execute();
  const pinned =
    pinnedIds.length === 0
      ? []
      : await trx
          .selectFrom('revisions')
          .selectAll()
          .where('service_id', 'in', pinnedIds)
          .where((eb) =>
            eb(
              'number',
              '=',
              eb
                .selectFrom('revisions as newer')
                .select((inner) => inner.fn.max('newer.number').as('newest'))
                .whereRef('newer.service_id', '=', 'revisions.service_id'),
            ),
          )
          .execute();
  return new Map([...currents, ...pinned].map((revision) => [revision.service_id, revision]));
}

/**
 * Inserts `revisions` (one per service, `number` left to this function: each service's next) and makes each its
 * service's current revision, marking the service stale; a pinned service's revision waits for the pin's release.
 */
async function addRevisions(trx: Transaction<Database>, revisions: ReadonlyArray<Insertable<RevisionTable>>): Promise<void> {
  const serviceIds = revisions.map((revision) => revision.service_id);
  // Each service's newest number, whichever revision is current (a move back from a rejected one makes an older one).
  const last = await lastRevisionNumbers(trx, serviceIds);
  await trx
    .insertInto('revisions')
    .values(revisions.map((revision) => ({ ...revision, number: (last.get(revision.service_id) ?? 0) + 1 })))
    .execute();
  // The new revisions' ids are known: no lookup of each service's newest revision.
  const current = byId(revisions.map((revision) => [revision.service_id, revision.id as string]));
  await trx
    .updateTable('services')
    .set({ revision_id: current, status: 'stale' })
    .where('id', 'in', serviceIds)
    .where('pinned', 'is', null)
    .execute();
}

/** The number of each service's newest revision (absent for a service without one). */
async function lastRevisionNumbers(trx: Transaction<Database>, serviceIds: readonly string[]): Promise<Map<string, number>> {
  const numbers = await trx
    .selectFrom('revisions')
    .select((eb) => ['service_id', eb.fn.max('number').as('last')])
    .where('service_id', 'in', serviceIds)
    .groupBy('service_id')
    .execute();
  return new Map(numbers.map((row) => [row.service_id, Number(row.last ?? 0)]));
}

/** The sealed columns a change writes for one service. */
type SealedWrites = Partial<Record<SealedColumn, string | null>>;

/**
 * Each sealed column of `sealed` chosen by service id (byId): their values differ, each sealed for its own service,
 * and one statement for all of them is one round trip to PostgreSQL, not one per service.
 */
function perService(sealed: ReadonlyMap<string, SealedWrites>): Partial<Record<SealedColumn, RawBuilder<string | null>>> {
  const columns = new Set([...sealed.values()].flatMap((writes) => Object.keys(writes) as SealedColumn[]));
  return Object.fromEntries(
    [...columns].map((column) => [column, byId([...sealed].map(([id, writes]) => [id, writes[column] ?? null] as const))]),
  );
}

/** `CASE id WHEN … THEN … END`: a text value per row of an UPDATE of services, by their ids. */
function byId(values: ReadonlyArray<readonly [string, string | null]>): RawBuilder<string | null> {
  const branches = values.map(([id, value]) => sql`WHEN ${id} THEN CAST(${value} AS TEXT)`);
  return sql<string | null>`CASE id ${sql.join(branches, sql` `)} END`;
}

/**
 * Keeps service_sources equal to the repositories of each service's extra sources (spec.sources), for services
 * whose spec was just written.
 */
export async function recordSourceRepositories(
  trx: Transaction<Database>,
  services: ReadonlyArray<{ id: string; spec: ServiceSpec }>,
): Promise<void> {
  if (services.length === 0) return;
  await trx
    .deleteFrom('service_sources')
    .where(
      'service_id',
      'in',
      services.map((service) => service.id),
    )
    .execute();
  const rows = services.flatMap(({ id, spec }) =>
    [...new Set((spec.sources ?? []).map((source) => source.repositoryId))].map((repositoryId) => ({
      service_id: id,
      repository_id: repositoryId,
    })),
  );
  if (rows.length > 0) await trx.insertInto('service_sources').values(rows).execute();
}

/** Services by name, of one cluster when given, and sourced from a repository (its own or an extra source) when given. */
export async function listServices(db: Kysely<Database>, filter: { clusterId?: string; repositoryId?: string } = {}): Promise<Service[]> {
  let query = db.selectFrom('services').selectAll().orderBy('name');
  if (filter.clusterId) query = query.where('cluster_id', '=', filter.clusterId);
  const { repositoryId } = filter;
  if (repositoryId)
    query = query.where((eb) =>
      eb.or([
        eb('repository_id', '=', repositoryId),
        eb('id', 'in', eb.selectFrom('service_sources').select('service_id').where('service_sources.repository_id', '=', repositoryId)),
      ]),
    );
  return await servicesOf(db, await query.execute());
}

/**
 * A cluster's services as its agent polls them (server/agent-services.ts): as listServices, but without their
 * components, which an agent is never sent, and each with its configuration and secret values opened from the same
 * row. Every poll of every agent reads this, so it makes two round trips: the services, then their revisions.
 * @throws Error when a sealed value cannot be opened with `box`.
 */
export async function servicesForAgent(
  db: Kysely<Database>,
  box: SecretBox,
  clusterId: string,
): Promise<Array<{ service: Service; secrets: ServiceSecrets }>> {
  const rows = await db.selectFrom('services').selectAll().where('cluster_id', '=', clusterId).orderBy('name').execute();
  const rowById = new Map(rows.map((row) => [row.id, row]));
  return (await servicesOf(db, rows, { components: false })).map((service) => ({
    service,
    secrets: secretsOf(box, rowById.get(service.id)!),
  }));
}

/**
 * The live (not being deleted) services `ownerId` owns, as ids and clusters only: what planning a global service's
 * copies and kicking their agents needs, without the revisions and components listServices reads for each.
 */
export async function listOwnedServiceRefs(db: Kysely<Database>, ownerId: string): Promise<ServiceRef[]> {
  return await db
    .selectFrom('services')
    .select(['id', 'cluster_id as clusterId'])
    .where('owner_id', '=', ownerId)
    .where('deleted_at', 'is', null)
    .execute();
}

/** @throws NotFoundError */
export async function getService(db: Kysely<Database>, clusterId: string, name: string): Promise<Service> {
  const row = await db.selectFrom('services').selectAll().where('cluster_id', '=', clusterId).where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('service', name);
  return (await servicesOf(db, [row]))[0]!;
}

/** @throws NotFoundError */
export async function getServiceById(db: Kysely<Database>, id: string): Promise<Service> {
  const [service] = await servicesOf(db, [await serviceRow(db, id)]);
  if (!service) throw new NotFoundError('service', id);
  return service;
}

/**
 * The services of `rows`, in their order, with their revisions and components read in a few queries (`components:
 * false` leaves every service's list empty and skips that query).
 */
async function servicesOf(
  db: Kysely<Database>,
  rows: ReadonlyArray<Selectable<ServiceTable>>,
  read: { components: boolean } = { components: true },
): Promise<Service[]> {
  const revisionIds = [
    ...new Set(rows.flatMap((row) => [row.revision_id, row.applied_revision_id]).filter((id): id is string => id !== null)),
  ];
  const [revisions, components] = await Promise.all([
    inChunks(revisionIds, (ids) => db.selectFrom('revisions').selectAll().where('id', 'in', ids).execute()),
    inChunks(read.components ? rows.map((row) => row.id) : [], (ids) =>
      db
        .selectFrom('service_components')
        .selectAll()
        .where('service_id', 'in', ids)
        .orderBy('kind')
        .orderBy('namespace')
        .orderBy('name')
        .execute(),
    ),
  ]);
  const revisionById = new Map(revisions.map((revision) => [revision.id, revision]));
  const componentsOf = Map.groupBy(components, (component) => component.service_id);
  const newest = await newestRevisionNumbers(
    db,
    rows.filter((row) => row.pinned !== null).map((row) => row.id),
  );
  return rows.flatMap((row) => {
    const revision = row.revision_id === null ? undefined : revisionById.get(row.revision_id);
    // Deleted between the queries (its revisions went with it): left out, as if read a moment later.
    if (!revision) return [];
    const service: Service = {
      id: row.id,
      clusterId: row.cluster_id,
      name: row.name,
      spec: JSON.parse(row.spec) as ServiceSpec,
      dependencies: JSON.parse(row.dependencies) as string[],
      protect: row.protect === 1,
      ownerId: row.owner_id,
      status: row.status as ServiceStatus,
      errors: JSON.parse(row.errors) as ServiceError[],
      revision: toRevision(revision),
      pinned: row.pinned === null ? null : (JSON.parse(row.pinned) as Pin),
      pendingRevisionNumber: (newest.get(row.id) ?? 0) > revision.number ? newest.get(row.id)! : null,
      appliedRevisionId: row.applied_revision_id,
      appliedRevisionNumber: row.applied_revision_id === null ? null : (revisionById.get(row.applied_revision_id)?.number ?? null),
      components: (componentsOf.get(row.id) ?? []).map(({ service_id: _serviceId, drift, message, ...c }) => ({
        ...c,
        state: c.state as ComponentState,
        ...(message === null ? {} : { message }),
        synced: c.synced === 1,
        ...(drift === null ? {} : { drift: JSON.parse(drift) as ComponentDrift }),
      })),
      deletedAt: row.deleted_at,
      createdAt: row.created_at,
    };
    return [service];
  });
}

/** The newest revision number of each of `serviceIds` (only pinned services need it: it is their current one otherwise). */
async function newestRevisionNumbers(db: Kysely<Database>, serviceIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await inChunks(serviceIds, (ids) =>
    db
      .selectFrom('revisions')
      .select((eb) => ['service_id', eb.fn.max('number').as('newest')])
      .where('service_id', 'in', ids)
      .groupBy('service_id')
      .execute(),
  );
  return new Map(rows.map((row) => [row.service_id, Number(row.newest)]));
}

/**
 * The tarball digest and chart version of each pinned service's newest revision (the one that waits for the pin's
 * release), by id: what a new commit or chart version is compared with, so one already recorded is not recorded again
 * while the service is pinned.
 */
export async function waitingRevisions(
  db: Kysely<Database>,
  services: ReadonlyArray<Pick<Service, 'id' | 'pendingRevisionNumber'>>,
): Promise<Map<string, { digest: string | null; chartVersion: string | null }>> {
  const waiting = services.filter((service) => service.pendingRevisionNumber !== null);
  const rows = await inChunks(
    waiting.map((service) => service.id),
    (ids) =>
      db.selectFrom('revisions').select(['service_id', 'number', 'digest', 'chart_version']).where('service_id', 'in', ids).execute(),
  );
  const numbers = new Map(waiting.map((service) => [service.id, service.pendingRevisionNumber]));
  return new Map(
    rows
      .filter((row) => numbers.get(row.service_id) === row.number)
      .map((row) => [row.service_id, { digest: row.digest, chartVersion: row.chart_version }]),
  );
}

/** What a service keeps sealed, in clear. */
export interface ServiceSecrets {
  configuration: Record<string, string>;
  secretValues: Record<string, unknown>;
}

/**
 * Each service's configuration and secret values in clear, by service id (in full for agents only, keys for
 * readers; they are sealed in the database).
 */
export async function serviceSecrets(
  db: Kysely<Database>,
  box: SecretBox,
  serviceIds: readonly string[],
): Promise<Map<string, ServiceSecrets>> {
  const rows = await inChunks(serviceIds, (ids) =>
    db.selectFrom('services').select(['id', 'configuration', 'secret_values']).where('id', 'in', ids).execute(),
  );
  return new Map(rows.map((row) => [row.id, secretsOf(box, row)]));
}

/** The row's configuration and secret values, opened for their place. @throws Error when one does not open with `box`. */
function secretsOf(box: SecretBox, row: Pick<Selectable<ServiceTable>, 'id' | 'configuration' | 'secret_values'>): ServiceSecrets {
  return {
    configuration: openObject(box, row.configuration, row.id, 'configuration'),
    secretValues: openObject(box, row.secret_values, row.id, 'secret_values'),
  };
}

/** Marks the service for deletion: its agent deletes its objects (unless detached) and reports, then it is gone. */
export async function markServiceDeleted(db: Kysely<Database>, serviceId: string, now = new Date()): Promise<void> {
  await db
    .updateTable('services')
    .set({ deleted_at: now.toISOString(), updated_at: now.toISOString() })
    .where('id', '=', serviceId)
    .execute();
}

/**
 * Removes the service's records at once: on detach (whatever it applied stays in the cluster), and once the agent of
 * a deleted service reports nothing left of it (server/service-reports.ts).
 */
export async function removeService(db: Kysely<Database>, serviceId: string): Promise<void> {
  await db.deleteFrom('services').where('id', '=', serviceId).execute();
}

/**
 * Adds a revision of `serviceId` holding `content`, or the service's own spec, configuration and secret values, and
 * makes it the service's current one (createService, and revisions.ts's revise and rollback).
 */
export async function addRevision(
  trx: Transaction<Database>,
  serviceId: string,
  source: ResolvedSource,
  author: Author,
  time: string,
  content?: RevisionContent,
): Promise<void> {
  const service = await serviceRow(trx, serviceId);
  const own = { spec: service.spec, configuration: service.configuration, secretValues: service.secret_values };
  await addRevisions(trx, [newRevision(serviceId, source, author, time, content ?? own)]);
}

/** What a revision holds of its service, as stored (configuration and secret values sealed). */
interface RevisionContent {
  spec: string;
  configuration: string | null;
  secretValues: string | null;
}

/** A revision row for addRevisions, its number still to be given. */
function newRevision(
  serviceId: string,
  source: ResolvedSource,
  author: Author,
  time: string,
  content: RevisionContent,
): Insertable<RevisionTable> {
  return {
    id: randomUUID(),
    service_id: serviceId,
    number: 0,
    commit_sha: source.commit || null,
    digest: source.digest || null,
    chart_version: source.chartVersion ?? null,
    source_commits: source.sourceCommits ? JSON.stringify(source.sourceCommits) : null,
    spec: content.spec,
    configuration: content.configuration,
    secret_values: content.secretValues,
    message: author.message ?? null,
    created_by: author.by,
    created_at: time,
  };
}

/** The service's row as stored. @throws NotFoundError */
export async function serviceRow(db: Kysely<Database>, id: string): Promise<Selectable<ServiceTable>> {
  const row = await db.selectFrom('services').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('service', id);
  return row;
}

/** What a stored revision resolved its source to, as addRevision takes it. */
export function resolvedSourceOf(row: Selectable<RevisionTable>): ResolvedSource {
  return {
    commit: row.commit_sha ?? '',
    digest: row.digest ?? '',
    chartVersion: row.chart_version ?? undefined,
    ...(row.source_commits === null ? {} : { sourceCommits: JSON.parse(row.source_commits) as string[] }),
  };
}

/** A revision row as the API's Revision (its sealed values left out). */
export function toRevision(row: Selectable<RevisionTable>): Revision {
  return {
    id: row.id,
    number: row.number,
    commit: row.commit_sha,
    digest: row.digest,
    chartVersion: row.chart_version,
    sourceCommits: row.source_commits === null ? null : (JSON.parse(row.source_commits) as string[]),
    spec: JSON.parse(row.spec) as ServiceSpec,
    message: row.message,
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}

type SealedColumn = 'configuration' | 'secret_values';

/**
 * Where a service's `column` is sealed: bound to the service, by id. Its revisions keep copies of the service's
 * sealed values (a rollback copies one back), so the place names the service, whose row or revisions hold it: a
 * value moved to another service, or between the two columns, does not open.
 */
function servicePlace(serviceId: string, column: SealedColumn): SealContext {
  return { table: 'services', column, row: serviceId };
}

/** Null for none, so a service without configuration or secret values has nothing sealed. */
function sealObject(box: SecretBox, object: Record<string, unknown> | undefined, serviceId: string, column: SealedColumn): string | null {
  return object && Object.keys(object).length > 0 ? box.sealJson(object, servicePlace(serviceId, column)) : null;
}

function openObject<T extends Record<string, unknown>>(box: SecretBox, sealed: string | null, serviceId: string, column: SealedColumn): T {
  return sealed === null ? ({} as T) : box.openJson<T>(sealed, servicePlace(serviceId, column));
}

function sameSealed(
  box: SecretBox,
  sealed: string | null,
  next: Record<string, unknown>,
  serviceId: string,
  column: SealedColumn,
): boolean {
  return isDeepStrictEqual(openObject(box, sealed, serviceId, column), next);
}
