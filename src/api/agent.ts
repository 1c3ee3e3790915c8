/**
 * What an agent and the server say to each other (/v1/agent): its ping with the cluster's versions, the services
 * it polls for (with their clusters, sources' digests, configuration and secret values in clear), the report of
 * what it applied, and the JOB gates it runs for pipelines and their outcome.
 */
import { Type, type Static } from 'typebox';
import { ClusterSchema } from './clusters.ts';
import { ContextConfiguration } from './contexts.ts';
import {
  AgentDeploymentSchema,
  AgentSourceSchema,
  ComponentSchema,
  PathRendererSchema,
  RendererSchema,
  ServiceErrorSchema,
  SyncConfigSchema,
} from './services.ts';

export const PingSchema = Type.Object(
  {
    kubernetesVersion: Type.String({ minLength: 1, maxLength: 64 }),
    agentVersion: Type.String({ minLength: 1, maxLength: 64 }),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
    /** Absent when the agent runs otherwise (a process beside the cluster): the server then keeps no service of it. */
    deployment: Type.Optional(AgentDeploymentSchema),
  },
  { additionalProperties: false },
);

/** The server's answer to a ping: the cluster, and whether the agent is to rotate its deploy token now. */
export const PingAnswerSchema = Type.Intersect([
  ClusterSchema,
  Type.Object({
    rotateToken: Type.Boolean({
      description:
        'The token this ping was sent with is due for rotation (older than the server allows, or an admin asked): ' +
        'fetch a new one (POST /v1/agent/token), store it, then use it.',
    }),
  }),
]);
export type PingAnswer = Static<typeof PingAnswerSchema>;

/**
 * The cluster as an agent's templates see it (`cluster` in Liquid), with Plural's names for the fields it binds;
 * version is the Kubernetes version the agent last reported (Plural's currentVersion).
 */
const AgentClusterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  tags: Type.Record(Type.String(), Type.String()),
  distro: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
});

/** What an agent gets for each service of its cluster. */
export const AgentServiceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  cluster: AgentClusterSchema,
  revision: Type.Object({
    id: Type.String(),
    number: Type.Integer(),
    commit: Type.Union([Type.String(), Type.Null()]),
    digest: Type.String(),
  }),
  folder: Type.String(),
  renderer: RendererSchema,
  /** Folders of the tarball each rendered on its own (Plural's renderers); instead of `renderer` when present. */
  renderers: Type.Optional(Type.Array(PathRendererSchema)),
  configuration: Type.Record(Type.String(), Type.String()),
  /** Helm values merged over the wrapper project's helm-values.yaml. */
  secretValues: Type.Record(Type.String(), Type.Unknown()),
  /** The bound contexts' configuration by name; a context deleted since the revision was made is absent. */
  contexts: Type.Record(Type.String(), ContextConfiguration),
  /** Dependencies not yet healthy on the cluster; the agent applies nothing until this is empty. */
  waitingFor: Type.Array(Type.String()),
  syncConfig: Type.Optional(SyncConfigSchema),
  /** Whether its `*.liquid` files are rendered (Plural's templated). */
  templated: Type.Boolean(),
  deleting: Type.Boolean(),
  /** Set on the cluster's own agent service (gantry-agent): the agent applies it only when it runs as that Deployment. */
  agent: Type.Optional(AgentSourceSchema),
  /**
   * Set on a management cluster's service holding the Cluster API objects of a fleet cluster (cluster create
   * --class): once Cluster API reports that cluster available, this agent installs the cluster's agent.
   */
  provisions: Type.Optional(Type.String()),
});

/**
 * What a management cluster's agent installs into a cluster its Cluster API made: a fresh deploy token of that
 * cluster (every earlier one revoked), the image its agent runs, and the server URL it dials when the server has a
 * public one (otherwise the management agent's own).
 */
export const ProvisionedAgentInstallSchema = Type.Object({
  deployToken: Type.String({ description: 'Shown only here.' }),
  image: Type.String(),
  server: Type.Union([Type.String(), Type.Null()]),
});

export const ReportSchema = Type.Object(
  {
    revisionId: Type.String(),
    components: Type.Array(ComponentSchema, { maxItems: 10_000 }),
    errors: Type.Array(ServiceErrorSchema, { maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const TarballQuery = Type.Object({ digest: Type.String({ pattern: '^[0-9a-f]{64}$' }) });

/** A JOB gate an agent is to run: its Job's namespace, name and spec, for the context it runs for. */
export const AgentGateSchema = Type.Object({
  pipeline: Type.String(),
  from: Type.String(),
  to: Type.String(),
  gate: Type.String(),
  contextId: Type.String(),
  namespace: Type.String(),
  jobName: Type.String({ description: 'stable per gate and context, so a restarted agent finds its Job' }),
  spec: Type.Record(Type.String(), Type.Unknown(), { description: 'the batch/v1 JobSpec' }),
});

export const GateReportSchema = Type.Object(
  {
    pipeline: Type.String(),
    from: Type.String(),
    to: Type.String(),
    gate: Type.String(),
    contextId: Type.String(),
    state: Type.Union([Type.Literal('OPEN'), Type.Literal('CLOSED')], { description: 'OPEN: the Job succeeded; CLOSED: it failed' }),
    reason: Type.String({ maxLength: 4000, description: "the Job's condition, and the failing Pod's status" }),
    logs: Type.Optional(
      Type.String({
        maxLength: 16_384,
        description: "the end of each of the Job's Pods' container logs, as the agent read them when it finished",
      }),
    ),
  },
  { additionalProperties: false },
);

export type AgentPing = Static<typeof PingSchema>;
export type AgentService = Static<typeof AgentServiceSchema>;
export type AgentReport = Static<typeof ReportSchema>;
/** A JOB gate for its cluster's agent to run. */
export type AgentGate = Static<typeof AgentGateSchema>;
export type ProvisionedAgentInstall = Static<typeof ProvisionedAgentInstallSchema>;
export type GateReport = Static<typeof GateReportSchema>;
