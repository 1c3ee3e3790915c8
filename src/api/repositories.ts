/**
 * Where services' sources come from: git repositories (/v1/repositories, with their credentials, which are never
 * returned, and the health of their last fetch), the server replicas that fetch them (/v1/replicas), and Helm
 * repositories with their credentials (/v1/helm-repositories).
 */
import { Type, type Static } from 'typebox';
import { Time } from './common.ts';

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

export const ReplicaSchema = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'where the replica listens' }),
  startedAt: Time,
  heartbeatAt: Time,
  repositories: Type.Array(Type.String(), { description: 'URLs of the git repositories this replica fetches on the interval' }),
});

export const RepositoryParams = Type.Object({ id: Type.String({ description: 'the id, or the URL (URL-encoded)' }) });

export const HelmRepositoryUpsertSchema = Type.Object(
  {
    url: Type.String({ pattern: '^https?://.+', description: 'the Helm repository (its index.yaml is below it)' }),
    username: Type.Optional(Type.String({ minLength: 1, description: 'basic auth; with password' })),
    password: Type.Optional(Type.String({ minLength: 1, description: 'sealed, never returned' })),
  },
  { additionalProperties: false },
);
export type HelmRepositoryUpsertBody = Static<typeof HelmRepositoryUpsertSchema>;

export const HelmRepositorySchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  authenticated: Type.Boolean({ description: 'whether the server has credentials for it' }),
  createdAt: Time,
  updatedAt: Time,
});
