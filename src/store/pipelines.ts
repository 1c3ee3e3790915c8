/**
 * Release pipelines (Plural's Pipeline): stages of services, edges between stages carrying gates. A stage whose
 * services are all healthy at new revisions gets a promotion context (each service's revision, commit and chart
 * version); the gates of its outgoing edges are then PENDING for that context, and an edge whose gates are all OPEN
 * for the context promotes it once (the unique promotion row). A newer context supersedes the older: the gates are
 * reset for it, and a decision on a gate names the context it was made for, so a stale one never counts.
 */
import type { RolloutSpec } from '../api/rollouts.ts';
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { NotFoundError } from './errors.ts';
import type { HealthSpec } from '../pipeline/health-gate.ts';
import type { WindowSpec } from '../pipeline/window.ts';
import type { Database, PipelineContextTable, PipelineGateTable, PipelinePromotionTable, PipelineTable } from './schema.ts';

export type GateType = 'APPROVAL' | 'WINDOW' | 'JOB' | 'HEALTH';
export type GateState = 'PENDING' | 'OPEN' | 'CLOSED';

/** A JOB gate's Job: run by the agent of the cluster, in the namespace; its spec is a batch/v1 JobSpec. */
export interface JobGateSpec {
  clusterId: string;
  namespace: string;
  spec: Record<string, unknown>;
}

/**
 * APPROVAL: decided by people; WINDOW: open inside its windows (pipeline/window.ts); JOB: a Job's outcome; HEALTH: a
 * soak and a query (pipeline/health-gate.ts). Any of them CLOSES when still PENDING `timeout` (a duration) after
 * its context was recorded.
 */
export type GateSpec = { name: string; timeout?: string } & (
  { type: 'APPROVAL' } | { type: 'WINDOW'; window: WindowSpec } | { type: 'JOB'; job: JobGateSpec } | { type: 'HEALTH'; health: HealthSpec }
);

/** A stage's service; `criteria` names the service it is promoted from and the configuration keys copied. */
export interface StageService {
  serviceId: string;
  criteria?: { sourceId: string; secrets: string[] };
}

export interface PipelineSpec {
  /** `rollout`: the services a promotion moves into the stage get their revisions wave by wave (server/rollouts.ts). */
  stages: Array<{ name: string; services: StageService[]; rollout?: RolloutSpec }>;
  edges: Array<{ from: string; to: string; gates: GateSpec[] }>;
}

export interface Pipeline {
  id: string;
  name: string;
  spec: PipelineSpec;
  createdAt: string;
  updatedAt: string;
}

/** One service of a context: the revision it was healthy at, and what that revision pinned. */
export interface ContextService {
  serviceId: string;
  revision: number;
  commit: string | null;
  chartVersion: string | null;
}

export interface PromotionContext {
  id: string;
  stage: string;
  services: ContextService[];
  createdAt: string;
}

export interface Gate {
  from: string;
  to: string;
  name: string;
  type: GateType;
  state: GateState;
  /** The context the state is for; null before the source stage has one. */
  contextId: string | null;
  decidedBy: string | null;
  reason: string | null;
  /** JOB gates: the end of the Job's logs, reported with its outcome. */
  logs: string | null;
  forced: boolean;
  updatedAt: string;
}

/** A target service as a promotion changed it. */
export interface PromotedService {
  serviceId: string;
  sourceId: string;
  commit: string | null;
  chartVersion: string | null;
  /** Configuration keys copied from the source. */
  secrets: string[];
  /** The target's revision after the promotion. */
  revision: number;
}

export interface Promotion {
  id: string;
  from: string;
  to: string;
  contextId: string;
  services: PromotedService[];
  gates: Array<{ name: string; type: GateType; decidedBy: string | null; forced: boolean }>;
  createdAt: string;
}

/**
 * Creates the pipeline or replaces its spec. Gates keep their state when their edge and name stay; new gates are
 * PENDING for their source stage's current context.
 */
export async function upsertPipeline(db: Kysely<Database>, name: string, spec: PipelineSpec, now = new Date()): Promise<Pipeline> {
  const time = now.toISOString();
  await db.transaction().execute(async (trx) => {
    const existing = await trx.selectFrom('pipelines').select('id').where('name', '=', name).executeTakeFirst();
    const id = existing?.id ?? randomUUID();
    if (existing) {
      await trx
        .updateTable('pipelines')
        .set({ spec: JSON.stringify(spec), updated_at: time })
        .where('id', '=', id)
        .execute();
    } else {
      await trx
        .insertInto('pipelines')
        .values({ id, name, spec: JSON.stringify(spec), created_at: time, updated_at: time })
        .execute();
    }
    const kept = await trx.selectFrom('pipeline_gates').selectAll().where('pipeline_id', '=', id).execute();
    await trx.deleteFrom('pipeline_gates').where('pipeline_id', '=', id).execute();
    const contexts = await currentContexts(trx, id);
    const rows = spec.edges.flatMap((edge) =>
      edge.gates.map((gate) => {
        const old = kept.find((row) => row.from_stage === edge.from && row.to_stage === edge.to && row.name === gate.name);
        if (old && old.type === gate.type) return old;
        return pendingGate(id, edge, gate, contexts.get(edge.from)?.id ?? null, time);
      }),
    );
    if (rows.length > 0) await trx.insertInto('pipeline_gates').values(rows).execute();
  });
  return await getPipeline(db, name);
}

/** @throws NotFoundError */
export async function getPipeline(db: Kysely<Database>, name: string): Promise<Pipeline> {
  const row = await db.selectFrom('pipelines').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('pipeline', name);
  return toPipeline(row);
}

export async function listPipelines(db: Kysely<Database>): Promise<Pipeline[]> {
  return (await db.selectFrom('pipelines').selectAll().orderBy('name').execute()).map(toPipeline);
}

/** Deletes the pipeline with its contexts, gates and promotions. @throws NotFoundError */
export async function deletePipeline(db: Kysely<Database>, name: string): Promise<void> {
  const result = await db.deleteFrom('pipelines').where('name', '=', name).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) throw new NotFoundError('pipeline', name);
}

/** Each stage's newest context, by stage name. */
export async function currentContexts(db: Kysely<Database>, pipelineId: string): Promise<Map<string, PromotionContext>> {
  const rows = await db.selectFrom('pipeline_contexts').selectAll().where('pipeline_id', '=', pipelineId).orderBy('created_at').execute();
  return new Map(rows.map((row) => [row.stage, toContext(row)]));
}

export async function getContext(db: Kysely<Database>, id: string): Promise<PromotionContext> {
  const row = await db.selectFrom('pipeline_contexts').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('promotion context', id);
  return toContext(row);
}

/**
 * Records a new context for the stage and resets the gates of its outgoing edges to PENDING for it: a promotion of
 * the stage's older context, unfinished, can no longer happen.
 */
export async function recordContext(
  db: Kysely<Database>,
  pipelineId: string,
  stage: string,
  services: ContextService[],
  now = new Date(),
): Promise<PromotionContext> {
  const row: Selectable<PipelineContextTable> = {
    id: randomUUID(),
    pipeline_id: pipelineId,
    stage,
    services: JSON.stringify(services),
    created_at: now.toISOString(),
  };
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('pipeline_contexts').values(row).execute();
    await trx
      .updateTable('pipeline_gates')
      .set({ state: 'PENDING', context_id: row.id, decided_by: null, reason: null, logs: null, forced: 0, updated_at: row.created_at })
      .where('pipeline_id', '=', pipelineId)
      .where('from_stage', '=', stage)
      .execute();
  });
  return toContext(row);
}

export async function listGates(db: Kysely<Database>, pipelineId: string): Promise<Gate[]> {
  const rows = await db.selectFrom('pipeline_gates').selectAll().where('pipeline_id', '=', pipelineId).execute();
  return rows.map(toGate);
}

/**
 * Opens or closes a gate for `contextId`.
 * @returns false when the gate is no longer at that context (a newer one superseded it) or does not exist.
 */
export async function decideGate(
  db: Kysely<Database>,
  pipelineId: string,
  gate: { from: string; to: string; name: string },
  decision: { state: 'OPEN' | 'CLOSED'; by: string; reason?: string; logs?: string; forced: boolean; contextId: string },
  now = new Date(),
): Promise<boolean> {
  const result = await db
    .updateTable('pipeline_gates')
    .set({
      state: decision.state,
      decided_by: decision.by,
      reason: decision.reason ?? null,
      logs: decision.logs ?? null,
      forced: decision.forced ? 1 : 0,
      updated_at: now.toISOString(),
    })
    .where('pipeline_id', '=', pipelineId)
    .where('from_stage', '=', gate.from)
    .where('to_stage', '=', gate.to)
    .where('name', '=', gate.name)
    .where('context_id', '=', decision.contextId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Sets a gate the server evaluates itself (WINDOW, HEALTH; any gate its timeout closes) for `contextId`, unless
 * someone forced it open.
 * @returns whether the row changed.
 */
export async function setEvaluatedGate(
  db: Kysely<Database>,
  pipelineId: string,
  gate: { from: string; to: string; name: string },
  evaluation: { state: GateState; reason: string; contextId: string },
  now = new Date(),
): Promise<boolean> {
  const result = await db
    .updateTable('pipeline_gates')
    .set({ state: evaluation.state, reason: evaluation.reason, decided_by: null, updated_at: now.toISOString() })
    .where('pipeline_id', '=', pipelineId)
    .where('from_stage', '=', gate.from)
    .where('to_stage', '=', gate.to)
    .where('name', '=', gate.name)
    .where('context_id', '=', evaluation.contextId)
    .where('forced', '=', 0)
    .where((eb) => eb.or([eb('state', '!=', evaluation.state), eb('reason', 'is', null), eb('reason', '!=', evaluation.reason)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Records the edge's promotion of its context. @returns false when it was recorded already (by another replica). */
export async function recordPromotion(
  db: Kysely<Database>,
  pipelineId: string,
  promotion: Omit<Promotion, 'id' | 'createdAt'>,
  now = new Date(),
): Promise<boolean> {
  try {
    await db
      .insertInto('pipeline_promotions')
      .values({
        id: randomUUID(),
        pipeline_id: pipelineId,
        from_stage: promotion.from,
        to_stage: promotion.to,
        context_id: promotion.contextId,
        services: JSON.stringify(promotion.services),
        gates: JSON.stringify(promotion.gates),
        created_at: now.toISOString(),
      })
      .execute();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/** Whether the edge promoted the context already. */
export async function wasPromoted(
  db: Kysely<Database>,
  pipelineId: string,
  edge: { from: string; to: string },
  contextId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('pipeline_promotions')
    .select('id')
    .where('pipeline_id', '=', pipelineId)
    .where('from_stage', '=', edge.from)
    .where('to_stage', '=', edge.to)
    .where('context_id', '=', contextId)
    .executeTakeFirst();
  return row !== undefined;
}

/** The pipeline's promotions, newest first. */
export async function listPromotions(db: Kysely<Database>, pipelineId: string): Promise<Promotion[]> {
  const rows = await db
    .selectFrom('pipeline_promotions')
    .selectAll()
    .where('pipeline_id', '=', pipelineId)
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map(toPromotion);
}

function pendingGate(
  pipelineId: string,
  edge: { from: string; to: string },
  gate: GateSpec,
  contextId: string | null,
  time: string,
): Selectable<PipelineGateTable> {
  return {
    pipeline_id: pipelineId,
    from_stage: edge.from,
    to_stage: edge.to,
    name: gate.name,
    type: gate.type,
    state: 'PENDING',
    context_id: contextId,
    decided_by: null,
    reason: null,
    logs: null,
    forced: 0,
    updated_at: time,
  };
}

function toPipeline(row: Selectable<PipelineTable>): Pipeline {
  return { id: row.id, name: row.name, spec: JSON.parse(row.spec) as PipelineSpec, createdAt: row.created_at, updatedAt: row.updated_at };
}

function toContext(row: Selectable<PipelineContextTable>): PromotionContext {
  return { id: row.id, stage: row.stage, services: JSON.parse(row.services) as ContextService[], createdAt: row.created_at };
}

function toGate(row: Selectable<PipelineGateTable>): Gate {
  return {
    from: row.from_stage,
    to: row.to_stage,
    name: row.name,
    type: row.type as GateType,
    state: row.state as GateState,
    contextId: row.context_id,
    decidedBy: row.decided_by,
    reason: row.reason,
    logs: row.logs,
    forced: row.forced === 1,
    updatedAt: row.updated_at,
  };
}

function toPromotion(row: Selectable<PipelinePromotionTable>): Promotion {
  return {
    id: row.id,
    from: row.from_stage,
    to: row.to_stage,
    contextId: row.context_id,
    services: JSON.parse(row.services) as PromotedService[],
    gates: JSON.parse(row.gates) as Promotion['gates'],
    createdAt: row.created_at,
  };
}
