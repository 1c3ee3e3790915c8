/**
 * The fleet's clusters (/v1/clusters): registering one (which hands out its agent's deploy token), its tags, its
 * tokens, and the cluster as the API shows it, with the health its agent's pings give it.
 */
import { Type, type Static } from 'typebox';
import { Name, Tags, Time } from './common.ts';
import { ComponentStateSchema } from './services.ts';

/**
 * How a cluster is made through Cluster API (src/capi): a Cluster with a managed topology of a ClusterClass, on the
 * fleet cluster that runs Cluster API (`management`, its management cluster), in `namespace` (default `default`),
 * where the ClusterClass `class` is; `workers` are machine deployments of the class's worker classes, `variables`
 * the class's variables by name. Plural's Cluster has `version` and node pools for its own providers; these are
 * Cluster API's topology fields.
 */
export const ClusterProvisioningSchema = Type.Object(
  {
    management: Name,
    namespace: Type.Optional(Name),
    class: Name,
    version: Type.String({ pattern: '^v\\d+\\.\\d+\\.\\d+$', description: 'Kubernetes version, e.g. v1.35.4' }),
    controlPlaneReplicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 99 })),
    workers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            class: Name,
            name: Name,
            replicas: Type.Integer({ minimum: 0, maximum: 10_000 }),
          },
          { additionalProperties: false },
        ),
        { maxItems: 50 },
      ),
    ),
    variables: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,62}$' }), Type.Unknown(), {
        description: "values of the ClusterClass's variables by name",
      }),
    ),
  },
  { additionalProperties: false },
);

/** Where the provisioning stands, from what the management cluster's agent reports of the Cluster API Cluster. */
export const ProvisioningStatusSchema = Type.Object({
  service: Type.String({ description: "the management cluster's service holding the Cluster API objects" }),
  state: Type.Union([ComponentStateSchema, Type.Literal('WAITING')], {
    description:
      "the Cluster API Cluster's readiness as a component state (RUNNING: available); WAITING until the management cluster's agent applied it",
  }),
  message: Type.String({ description: "Cluster API's phase and what it waits for (src/health/capi-cluster.ts)" }),
});

export const ClusterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String({ description: "Stable identity across renames (Plural's handle)." }),
  tags: Tags,
  distro: Type.Union([Type.String(), Type.Null()]),
  kubernetesVersion: Type.Union([Type.String(), Type.Null()], { description: 'as the agent last reported it' }),
  agentVersion: Type.Union([Type.String(), Type.Null()]),
  pingedAt: Type.Union([Time, Type.Null()]),
  health: Type.Union([Type.Literal('HEALTHY'), Type.Literal('UNHEALTHY'), Type.Literal('UNKNOWN')], {
    description: 'HEALTHY when the agent pinged in the last 5 minutes, UNKNOWN before its first ping',
  }),
  createdAt: Time,
  tokenRotationRequestedAt: Type.Union([Time, Type.Null()], {
    description: 'when an admin last asked the agent to rotate its deploy token; done once deployTokenCreatedAt is later',
  }),
  deployTokenCreatedAt: Type.Union([Time, Type.Null()], {
    description: 'when the newest deploy token the agent has made a request with was made; null before its first request',
  }),
  agentVersionPin: Type.Union([Type.String(), Type.Null()], {
    description: "the agent version an admin holds the cluster at (PUT /v1/clusters/{name}/agent-version); null: the server's own",
  }),
  provisioning: Type.Union([ClusterProvisioningSchema, Type.Null()], { description: 'how Cluster API makes it; null: made elsewhere' }),
  provisioningStatus: Type.Optional(ProvisioningStatusSchema),
  wantedAgentVersion: Type.String({
    description:
      "the version its agent should run: the pin, else the server's own; an agent run from the install's Deployment is moved to it " +
      'through its service gantry-agent. It differs from agentVersion while an upgrade is under way or stuck (version skew).',
  }),
});

/**
 * An image tag (OCI distribution spec: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`), which is what an agent version names:
 * the agent's image is `<repository>:<version>`.
 */
export const AgentVersion = Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$', description: 'an image tag, e.g. 0.2.0' });

export const AgentVersionPinSchema = Type.Object(
  {
    version: Type.Union([AgentVersion, Type.Null()], {
      description: "hold the cluster's agent at this version; null lets it follow the server's own",
    }),
  },
  { additionalProperties: false },
);

export const NewClusterSchema = Type.Object(
  {
    name: Name,
    handle: Type.Optional(Name),
    tags: Type.Optional(Tags),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
    provisioning: Type.Optional(ClusterProvisioningSchema),
  },
  { additionalProperties: false },
);
export type NewClusterBody = Static<typeof NewClusterSchema>;

export const CreatedClusterSchema = Type.Object({
  cluster: ClusterSchema,
  deployToken: Type.String({ description: "The cluster's agent token; shown only here." }),
});

export const DeployTokenSchema = Type.Object({ deployToken: Type.String({ description: 'Shown only here.' }) });

export const RotateTokenSchema = Type.Object(
  {
    revokeOthers: Type.Optional(
      Type.Boolean({
        description:
          "Revoke every earlier token of the cluster at once (default false: they end the server's overlap after the new token's first use).",
      }),
    ),
  },
  { additionalProperties: false },
);

export const TagsUpdateSchema = Type.Object({ tags: Tags }, { additionalProperties: false });

export const ClusterNameParams = Type.Object({ name: Type.String() });
