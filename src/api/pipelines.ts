/**
 * Release pipelines (/v1/pipelines, Plural's Pipeline): stages of services, and edges between them whose gates
 * (APPROVAL, WINDOW, JOB, HEALTH) a promotion waits for; the promotion contexts stages are at, and the
 * promotions made. The JOB gates' Jobs, which agents run, are in agent.ts.
 */
import { RolloutSchema, RolloutSpecSchema } from './rollouts.ts';
import { PreviewSchema } from './previews.ts';
import { Type, type Static } from 'typebox';
import { Name, Time } from './common.ts';

const StageName = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lower-case letters, digits and -' });
const ServiceByName = {
  cluster: Type.String({ minLength: 1, description: 'the cluster name' }),
  name: Type.String({ minLength: 1, description: 'the service name on that cluster' }),
};

/** Every gate may fail by itself when it waits too long, rather than hold a promotion forever without a word. */
const GateTimeout = Type.Optional(
  Type.String({
    minLength: 1,
    description:
      'fail the gate (CLOSED, saying so) when it is still PENDING this long after the source stage settled at its context, e.g. 2h',
  }),
);

const ApprovalGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('APPROVAL', { description: 'opened or rejected by an admin or approver' }),
    timeout: GateTimeout,
  },
  { additionalProperties: false },
);

const Recurrence = Type.Object(
  {
    cron: Type.String({ minLength: 1, description: 'when it starts: a cron expression (5 fields, or 6 with seconds)' }),
    duration: Type.String({ minLength: 1, description: 'how long it lasts, e.g. 8h or 90m' }),
  },
  { additionalProperties: false },
);

const WindowGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('WINDOW', { description: 'open only inside a window and outside every blackout' }),
    timeout: GateTimeout,
    window: Type.Object(
      {
        timeZone: Type.Optional(Type.String({ description: 'IANA time zone of the cron expressions; default UTC' })),
        windows: Type.Array(Recurrence, { minItems: 1 }),
        blackouts: Type.Optional(Type.Array(Recurrence)),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const JobGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('JOB', { description: "a Kubernetes Job run by a cluster's agent: success opens the gate, failure closes it" }),
    timeout: GateTimeout,
    job: Type.Object(
      {
        cluster: Type.String({ minLength: 1, description: 'the cluster whose agent runs the Job' }),
        namespace: Name,
        raw: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: 'a batch/v1 JobSpec, as Plural takes it; or containers' }),
        ),
        containers: Type.Optional(
          Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, description: "the Job's containers (corev1.Container)" }),
        ),
        labels: Type.Optional(Type.Record(Type.String(), Type.String())),
        annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
        nodeSelector: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "the Job's Pod's node selector" })),
        tolerations: Type.Optional(
          Type.Array(Type.Record(Type.String(), Type.Unknown()), {
            maxItems: 50,
            description: "the Job's Pod's tolerations (corev1.Toleration)",
          }),
        ),
        serviceAccount: Type.Optional(Type.String({ minLength: 1 })),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const HealthGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('HEALTH', { description: "the source stage's services stay healthy for the soak, the query holding" }),
    timeout: GateTimeout,
    health: Type.Object(
      {
        soak: Type.String({ minLength: 1, description: 'how long, e.g. 5m; 0 checks once' }),
        interval: Type.Optional(Type.String({ minLength: 1, description: 'between checks during the soak; default 15s' })),
        prometheus: Type.Optional(
          Type.Object(
            {
              url: Type.String({ description: 'a Prometheus-compatible HTTP API, e.g. http://prometheus:9090' }),
              query: Type.String({ minLength: 1, description: 'PromQL; holds when its result is non-empty with no 0 or NaN sample' }),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const PipelineUpsertSchema = Type.Object(
  {
    stages: Type.Array(
      Type.Object(
        {
          name: StageName,
          services: Type.Array(
            Type.Object(
              {
                ...ServiceByName,
                criteria: Type.Optional(
                  Type.Object(
                    {
                      ...ServiceByName,
                      secrets: Type.Optional(
                        Type.Array(Type.String({ minLength: 1 }), { description: 'configuration keys copied from that service' }),
                      ),
                    },
                    { additionalProperties: false, description: 'the service of an upstream stage this one is promoted from' },
                  ),
                ),
              },
              { additionalProperties: false },
            ),
            { minItems: 1 },
          ),
          rollout: Type.Optional(RolloutSpecSchema),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
    edges: Type.Array(
      Type.Object(
        {
          from: StageName,
          to: StageName,
          gates: Type.Optional(Type.Array(Type.Union([ApprovalGateSchema, WindowGateSchema, JobGateSchema, HealthGateSchema]))),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
  },
  { additionalProperties: false, description: "a release pipeline (Plural's Pipeline): stages of services, edges with gates" },
);
export type PipelineUpsertBody = Static<typeof PipelineUpsertSchema>;

const ContextSchema = Type.Object({
  id: Type.String(),
  createdAt: Time,
  services: Type.Array(
    Type.Object({
      ...ServiceByName,
      revision: Type.Integer(),
      commit: Type.Union([Type.String(), Type.Null()]),
      chartVersion: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

export const PipelineSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  stages: Type.Array(
    Type.Object({
      name: Type.String(),
      services: Type.Array(
        Type.Object({
          ...ServiceByName,
          status: Type.String({ description: 'the service status, or missing when it was deleted' }),
          revision: Type.Union([Type.Integer(), Type.Null()]),
          criteria: Type.Union([Type.Object({ ...ServiceByName, secrets: Type.Array(Type.String()) }), Type.Null()]),
        }),
      ),
      context: Type.Union([ContextSchema, Type.Null()], { description: 'the promotion context the stage is at' }),
      rollout: Type.Union([RolloutSpecSchema, Type.Null()], { description: 'how promotions into the stage roll out, if in waves' }),
      rolloutStatus: Type.Union([RolloutSchema, Type.Null()], { description: "the stage's newest rollout" }),
    }),
  ),
  edges: Type.Array(
    Type.Object({
      from: Type.String(),
      to: Type.String(),
      gates: Type.Array(
        Type.Object({
          name: Type.String(),
          type: Type.String(),
          state: Type.String({ description: 'PENDING, OPEN or CLOSED, for the source stage context contextId' }),
          contextId: Type.Union([Type.String(), Type.Null()]),
          decidedBy: Type.Union([Type.String(), Type.Null()]),
          reason: Type.Union([Type.String(), Type.Null()], {
            description: "a WINDOW gate's window, a HEALTH gate's soak, a rejection's or a failure's reason, a timeout",
          }),
          timeout: Type.Union([Type.String(), Type.Null()]),
          logs: Type.Union([Type.String(), Type.Null()], {
            description: "a JOB gate's Job's logs (the end of each Pod's containers'), as its agent read them when it finished",
          }),
          forced: Type.Boolean(),
          updatedAt: Time,
        }),
      ),
      promoted: Type.Boolean({ description: "whether the source stage's current context went along this edge" }),
      waitingFor: Type.Array(Type.String(), {
        description:
          "why the source stage's current context has not gone along this edge yet (or, once promoted, why a target does not run it): one line per blocker, empty when nothing waits",
      }),
      previews: Type.Array(PreviewSchema, {
        description:
          "what promoting the source stage's current context would do on each target's cluster (the newest preview per target); made when the context needs approval, or on request",
      }),
    }),
  ),
  createdAt: Time,
  updatedAt: Time,
});

export const PromotionSchema = Type.Object({
  id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  contextId: Type.String(),
  services: Type.Array(
    Type.Object({
      ...ServiceByName,
      source: Type.String({ description: '<cluster>/<service> promoted from' }),
      commit: Type.Union([Type.String(), Type.Null()]),
      chartVersion: Type.Union([Type.String(), Type.Null()]),
      secrets: Type.Array(Type.String()),
      revision: Type.Integer(),
    }),
  ),
  gates: Type.Array(
    Type.Object({ name: Type.String(), type: Type.String(), decidedBy: Type.Union([Type.String(), Type.Null()]), forced: Type.Boolean() }),
  ),
  createdAt: Time,
});

export const PipelineParams = Type.Object({ name: Type.String() });
export const GateParams = Type.Object({
  name: Type.String(),
  from: Type.String(),
  to: Type.String(),
  gate: Type.String(),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('reject'), Type.Literal('force')]),
});
