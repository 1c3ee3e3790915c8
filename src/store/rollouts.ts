/**
 * Progressive rollouts in the store (issue 43, part 2). A rollout belongs to an owner, a global service (its copies),
 * a pipeline stage (its services a promotion moves) or the fleet's agents (their services gantry-agent), and holds each of its services at the revision it runs with
 * the rollback pin of part 3 (`pinned: {by: 'rollout/<owner>'}`): the new revision is then recorded on each as one
 * that waits, and the runner (src/server/rollouts.ts) releases them wave by wave. Starting one supersedes the owner's
 * rollout under way and pins in the same transaction, so no service moves ahead of its wave. Every write goes over the version read (compare and set): two replicas acting on one report never
 * both release or roll back.
 */
import { randomUUID } from 'node:crypto';
import type { Expression, ExpressionBuilder, Kysely, Selectable, SqlBool } from 'kysely';
import type { RolloutSpec, RolloutState } from '../api/rollouts.ts';
import type { RolloutCopy } from '../rollout/plan.ts';
import type { Database, RolloutTable } from './schema.ts';
import type { Pin } from './services.ts';

/**
 * Whose rollout it is: a global service's, a pipeline stage's, or the fleet's agents' (to `agentVersion`; one such
 * rollout at a time, whatever its version).
 */
export type RolloutOwner = { globalServiceId: string } | { pipelineId: string; stage: string } | { agentVersion: string };

export interface Rollout {
  id: string;
  owner: RolloutOwner;
  state: RolloutState;
  cause: string;
  reason: string | null;
  wave: number;
  soakingSince: string | null;
  spec: RolloutSpec;
  copies: RolloutCopy[];
  version: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * Whose pins a rollout sets and lifts: `rollout/<name>`, the global service's name or `<pipeline>/<stage>` (a
 * global service's name has no slash, so the two never meet).
 */
export function rolloutPin(ownerName: string): string {
  return `rollout/${ownerName}`;
}

/**
 * Starts a rollout: the owner's rollout under way (RUNNING or PAUSED) is SUPERSEDED, the new one is RUNNING at wave 0,
 * and every WAITING copy is pinned by the rollout, in one transaction. A copy someone else pinned is planned SKIPPED by
 * the caller and left as it is.
 */
export async function startRollout(
  db: Kysely<Database>,
  input: { owner: RolloutOwner; pinBy: string; cause: string; spec: RolloutSpec; copies: RolloutCopy[] },
  now = new Date(),
): Promise<Rollout> {
  const time = now.toISOString();
  const row: Selectable<RolloutTable> = {
    id: randomUUID(),
    ...ownerColumns(input.owner),
    state: 'RUNNING',
    cause: input.cause,
    reason: null,
    wave: 0,
    soaking_since: null,
    spec: JSON.stringify(input.spec),
    copies: JSON.stringify(input.copies),
    version: 1,
    created_at: time,
    updated_at: time,
  };
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('rollouts')
      .set({ state: 'SUPERSEDED', reason: `superseded by a new revision (${input.cause})`, updated_at: time })
      .where(ownedBy(input.owner))
      .where('state', 'in', ['RUNNING', 'PAUSED'])
      .execute();
    await trx.insertInto('rollouts').values(row).execute();
    const waiting = input.copies.filter((copy) => copy.state === 'WAITING').map((copy) => copy.serviceId);
    if (waiting.length === 0) return;
    const pin = JSON.stringify({ by: input.pinBy, at: time } satisfies Pin);
    const rows = await trx.selectFrom('services').select(['id', 'pinned']).where('id', 'in', waiting).execute();
    // A pin of a user (a rollback) stays; the rollout's own pin from an earlier rollout is renewed.
    const ours = rows.filter((service) => service.pinned === null || (JSON.parse(service.pinned) as Pin).by === input.pinBy);
    if (ours.length > 0)
      await trx
        .updateTable('services')
        .set({ pinned: pin, updated_at: time })
        .where(
          'id',
          'in',
          ours.map((service) => service.id),
        )
        .execute();
  });
  return toRollout(row);
}

/** The owner's newest rollout, or undefined. */
export async function currentRollout(db: Kysely<Database>, owner: RolloutOwner): Promise<Rollout | undefined> {
  const row = await db
    .selectFrom('rollouts')
    .selectAll()
    .where(ownedBy(owner))
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .executeTakeFirst();
  return row ? toRollout(row) : undefined;
}

/**
 * The content the global service's newest rollout took away again (it FAILED or was ABORTED, and its changed copies
 * went back): the tarball digests and chart versions its copies ran, which the commit and chart trackers do not record
 * again; the next commit or chart version flows as usual. Empty sets when the newest rollout did not end so.
 */
export async function rolledBackContent(
  db: Kysely<Database>,
  globalServiceId: string,
): Promise<{ digests: Set<string>; chartVersions: Set<string> }> {
  const rollout = await currentRollout(db, { globalServiceId });
  const content = { digests: new Set<string>(), chartVersions: new Set<string>() };
  if (rollout?.state !== 'FAILED' && rollout?.state !== 'ABORTED') return content;
  for (const { rolledBack } of rollout.copies) {
    if (rolledBack?.digest) content.digests.add(rolledBack.digest);
    if (rolledBack?.chartVersion) content.chartVersions.add(rolledBack.chartVersion);
  }
  return content;
}

/** The rollouts under way (RUNNING or PAUSED) holding the service, for its report to reach. */
export async function rolloutsHolding(db: Kysely<Database>, serviceId: string): Promise<Rollout[]> {
  const rows = await db.selectFrom('rollouts').selectAll().where('state', 'in', ['RUNNING', 'PAUSED']).execute();
  return rows.map(toRollout).filter((rollout) => rollout.copies.some((copy) => copy.serviceId === serviceId));
}

/** The rollouts a server start looks at again: those RUNNING, and those a stop left with a rollback to make. */
export async function unfinishedRollouts(db: Kysely<Database>): Promise<Rollout[]> {
  const rows = await db.selectFrom('rollouts').selectAll().where('state', 'in', ['RUNNING', 'FAILED', 'ABORTED']).execute();
  return rows.map(toRollout).filter((rollout) => rollout.state === 'RUNNING' || rollout.copies.some((copy) => copy.rollbackPending));
}

/**
 * Writes the rollout's state, wave, soak and copies over the version it was read at.
 * @returns the rollout as written (version bumped), or undefined when another write came first (read it again).
 */
export async function saveRollout(db: Kysely<Database>, rollout: Rollout, now = new Date()): Promise<Rollout | undefined> {
  const updatedAt = now.toISOString();
  const result = await db
    .updateTable('rollouts')
    .set({
      state: rollout.state,
      reason: rollout.reason,
      wave: rollout.wave,
      soaking_since: rollout.soakingSince,
      copies: JSON.stringify(rollout.copies),
      version: rollout.version + 1,
      updated_at: updatedAt,
    })
    .where('id', '=', rollout.id)
    .where('version', '=', rollout.version)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1 ? { ...rollout, version: rollout.version + 1, updatedAt } : undefined;
}

/** The filter of the owner's rows. */
function ownedBy(owner: RolloutOwner): (eb: ExpressionBuilder<Database, 'rollouts'>) => Expression<SqlBool> {
  return (eb) =>
    'globalServiceId' in owner
      ? eb('global_service_id', '=', owner.globalServiceId)
      : 'agentVersion' in owner
        ? eb('agent_version', 'is not', null)
        : eb.and([eb('pipeline_id', '=', owner.pipelineId), eb('stage', '=', owner.stage)]);
}

function ownerColumns(owner: RolloutOwner): Pick<RolloutTable, 'global_service_id' | 'pipeline_id' | 'stage' | 'agent_version'> {
  const none = { global_service_id: null, pipeline_id: null, stage: null, agent_version: null };
  if ('globalServiceId' in owner) return { ...none, global_service_id: owner.globalServiceId };
  if ('agentVersion' in owner) return { ...none, agent_version: owner.agentVersion };
  return { ...none, pipeline_id: owner.pipelineId, stage: owner.stage };
}

function ownerOf(row: Selectable<RolloutTable>): RolloutOwner {
  if (row.global_service_id) return { globalServiceId: row.global_service_id };
  if (row.agent_version) return { agentVersion: row.agent_version };
  return { pipelineId: row.pipeline_id!, stage: row.stage! };
}

function toRollout(row: Selectable<RolloutTable>): Rollout {
  return {
    id: row.id,
    owner: ownerOf(row),
    state: row.state as RolloutState,
    cause: row.cause,
    reason: row.reason,
    wave: row.wave,
    soakingSince: row.soaking_since,
    spec: JSON.parse(row.spec) as RolloutSpec,
    copies: JSON.parse(row.copies) as RolloutCopy[],
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
