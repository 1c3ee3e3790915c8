/**
 * The API's request and response shapes (TypeBox): fastify validates requests against them and
 * /v1/openapi.json is generated from them, so the CLI, the agent and the UI read one contract.
 */
import { Type, type Static } from 'typebox';

/** A DNS label, as cluster and service names become parts of Kubernetes names and kubeconfig contexts. */
const Name = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lower-case letters, digits and -' });
const Tags = Type.Record(Type.String({ minLength: 1, maxLength: 63 }), Type.String({ maxLength: 63 }), {
  description: 'String tags, e.g. {"tier": "web"}; global services select clusters by them.',
});
const Time = Type.String({ description: 'ISO-8601 UTC time' });

export const ErrorSchema = Type.Object({
  message: Type.String(),
  field: Type.Optional(Type.String({ description: 'the offending field, e.g. body.name, for bad input' })),
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
  createdAt: Time,
});

export const NewClusterSchema = Type.Object(
  {
    name: Name,
    handle: Type.Optional(Name),
    tags: Type.Optional(Tags),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
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
  { revokeOthers: Type.Optional(Type.Boolean({ description: 'Revoke every earlier token of the cluster at once (default false).' })) },
  { additionalProperties: false },
);

export const TagsUpdateSchema = Type.Object({ tags: Tags }, { additionalProperties: false });

export const ClusterNameParams = Type.Object({ name: Type.String() });

export const PingSchema = Type.Object(
  {
    kubernetesVersion: Type.String({ minLength: 1, maxLength: 64 }),
    agentVersion: Type.String({ minLength: 1, maxLength: 64 }),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
  },
  { additionalProperties: false },
);
