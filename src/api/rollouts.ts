/**
 * Progressive rollouts of a global service's new revisions (issue 43, part 2): the `rollout` a global service may
 * declare (waves of clusters, batches within a wave, a soak with health checks between waves, what a failure does),
 * (and a pipeline stage its `rollout`, for the services a promotion moves), and a rollout's state as the API shows it
 * (GET /v1/globalservices/:name/rollout, GET /v1/pipelines/:name/stages/:stage/rollout).
 */
import { Type, type Static } from 'typebox';
import { LiteralUnion, Name, Time } from './common.ts';

const Duration = (description: string) => Type.String({ minLength: 1, maxLength: 32, description });

export const RolloutWaveSchema = Type.Object(
  {
    name: Name,
    tags: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 63 }), Type.String({ maxLength: 63 }), {
        description: 'clusters whose tags include all of these are in this wave (the first wave that matches)',
      }),
    ),
    clusters: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 10_000, description: 'clusters by name' })),
  },
  { additionalProperties: false },
);

export const RolloutSpecSchema = Type.Object(
  {
    waves: Type.Array(RolloutWaveSchema, {
      minItems: 1,
      maxItems: 50,
      description: 'in order; clusters no wave selects form a last wave named rest',
    }),
    batchSize: Type.Optional(
      Type.Integer({ minimum: 1, description: 'clusters of a wave released at once; the next batch waits until they are healthy' }),
    ),
    maxUnavailable: Type.Optional(
      Type.String({
        pattern: '^([1-9][0-9]*|([1-9][0-9]?|100)%)$',
        description: 'the batch as a count or a share of the wave (25%), rounded down, at least 1; batchSize wins',
      }),
    ),
    soak: Duration('how long a wave stays healthy before the next starts, e.g. 5m; 0 checks once'),
    interval: Type.Optional(Duration('between checks during a soak; default 15s')),
    prometheus: Type.Optional(
      Type.Object(
        {
          url: Type.String({ description: 'a Prometheus-compatible HTTP API' }),
          query: Type.String({ minLength: 1, description: 'PromQL; holds when its result is non-empty with no 0 or NaN sample' }),
        },
        { additionalProperties: false },
      ),
    ),
    progressDeadline: Type.Optional(Duration('how long a released copy may take to turn healthy before it counts as failed; default 10m')),
    onFailure: Type.Union([Type.Literal('pause'), Type.Literal('rollback')], {
      description: 'pause: stop where it failed; rollback: the copies already changed go back to the revision they ran, and it stops',
    }),
  },
  { additionalProperties: false, description: 'new revisions reach the copies wave by wave instead of all at once' },
);
export type RolloutSpec = Static<typeof RolloutSpecSchema>;

export const RolloutStates = ['RUNNING', 'PAUSED', 'DONE', 'FAILED', 'ABORTED', 'SUPERSEDED'] as const;
export type RolloutState = (typeof RolloutStates)[number];

export const CopyStates = ['WAITING', 'RELEASED', 'HEALTHY', 'FAILED', 'ROLLED_BACK', 'SKIPPED'] as const;
export type CopyState = (typeof CopyStates)[number];

export const RolloutSchema = Type.Object({
  id: Type.String(),
  globalService: Type.Union([Type.String(), Type.Null()], {
    description: "the global service whose copies it moves, or null for a stage's or the agents'",
  }),
  pipeline: Type.Union([Type.Object({ name: Type.String(), stage: Type.String() }), Type.Null()], {
    description: "the pipeline stage whose promoted services it moves, or null for a global service's",
  }),
  agentVersion: Type.Union([Type.String(), Type.Null()], {
    description: "for a rollout of the fleet's agents (their services gantry-agent), the version it moves them to; null otherwise",
  }),
  state: LiteralUnion(RolloutStates),
  cause: Type.String({ description: 'what started it: a template change, a commit' }),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why it paused, failed or was aborted' }),
  wave: Type.Integer({ description: 'the index of the wave under way (= the number of waves once done)' }),
  waves: Type.Array(Type.String(), { description: 'the waves in order, by name' }),
  soakingSince: Type.Union([Time, Type.Null()], { description: 'when the wave under way turned all healthy' }),
  copies: Type.Array(
    Type.Object({
      cluster: Type.String(),
      service: Type.String(),
      wave: Type.Integer(),
      batch: Type.Integer(),
      state: LiteralUnion(CopyStates),
      from: Type.Integer({ description: 'the revision it ran when the rollout started' }),
      revision: Type.Union([Type.Integer(), Type.Null()], { description: 'the revision it runs now' }),
      reason: Type.Union([Type.String(), Type.Null()]),
      releasedAt: Type.Union([Time, Type.Null()]),
    }),
  ),
  waitingFor: Type.Array(Type.String(), { description: 'why it has not finished yet: one line per blocker' }),
  createdAt: Time,
  updatedAt: Time,
});
export type ApiRollout = Static<typeof RolloutSchema>;

export const RolloutActionParams = Type.Object({
  name: Type.String(),
  action: Type.Union([Type.Literal('pause'), Type.Literal('resume'), Type.Literal('abort')]),
});

/** POST /v1/agents/rollout: the fleet's agents to a version, wave by wave. */
export const AgentRolloutRequestSchema = Type.Object(
  {
    version: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$',
        description: "an image tag; default the server's own version",
      }),
    ),
    rollout: RolloutSpecSchema,
  },
  { additionalProperties: false },
);

export const AgentRolloutActionParams = Type.Object({
  action: Type.Union([Type.Literal('pause'), Type.Literal('resume'), Type.Literal('abort')]),
});
