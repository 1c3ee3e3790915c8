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

const GitCredentialsSchema = Type.Object(
  {
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String()),
    identity: Type.Optional(Type.String({ description: 'SSH private key (PEM); needs known_hosts' })),
    known_hosts: Type.Optional(Type.String({ description: 'pinned SSH host keys, in known_hosts format' })),
    caFile: Type.Optional(Type.String({ description: 'PEM of a private CA for HTTPS' })),
  },
  { additionalProperties: false, description: 'The keys of a Kluctl git credentials Secret; stored encrypted, never returned.' },
);

export const NewRepositorySchema = Type.Object(
  {
    url: Type.String({
      pattern: '^((https?|ssh|git|file)://.+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+)$',
      description: 'https://, ssh://, git@host:path or file:// URL of the repository',
    }),
    credentials: Type.Optional(GitCredentialsSchema),
  },
  { additionalProperties: false },
);
export type NewRepositoryBody = Static<typeof NewRepositorySchema>;

export const RepositorySchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  auth: Type.Union([Type.Literal('none'), Type.Literal('basic'), Type.Literal('ssh')]),
  health: Type.Union([Type.Literal('PULLABLE'), Type.Literal('FAILED'), Type.Null()], {
    description: 'of the last fetch; null before the first',
  }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  pulledAt: Type.Union([Time, Type.Null()]),
  createdAt: Time,
});

export const RepositoryParams = Type.Object({ id: Type.String({ description: 'the id, or the URL (URL-encoded)' }) });
