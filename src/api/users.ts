/**
 * Who may do what: users and their login, API tokens, role bindings (a role within a scope, for users and groups),
 * the caller's identity and access review (what the UI may offer), and the audit log of changes.
 */
import { Type } from 'typebox';
import { Time } from './common.ts';

const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('writer'), Type.Literal('approver'), Type.Literal('reader')]);
const ScopeSchema = Type.Union(
  [
    Type.Literal('all'),
    Type.Object(
      {
        clusters: Type.Optional(Type.Array(Type.String())),
        clusterTags: Type.Optional(Type.Record(Type.String(), Type.String())),
        services: Type.Optional(Type.Array(Type.String())),
        pipelines: Type.Optional(Type.Array(Type.String())),
        repositories: Type.Optional(Type.Array(Type.String(), { description: 'git repository ids or URLs, Helm chart URLs' })),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      "'all', or the clusters (by name or tags), services (by name), pipelines (by name) and source repositories (by id or URL) a role covers",
  },
);
const GrantSchema = Type.Object({ role: RoleSchema, scope: ScopeSchema });
const UserName = Type.String({ pattern: '^[A-Za-z0-9._@-]{1,128}$', description: 'letters, digits, . _ @ -' });

export const LoginSchema = Type.Object({ username: Type.String(), password: Type.String() }, { additionalProperties: false });

export const IdentitySchema = Type.Object({
  kind: Type.Union([Type.Literal('user'), Type.Literal('token')]),
  name: Type.String(),
  groups: Type.Array(Type.String()),
  grants: Type.Array(GrantSchema),
});

export const AccessReviewSchema = Type.Object(
  {
    checks: Type.Array(
      Type.Object(
        {
          action: Type.Union([
            Type.Literal('read'),
            Type.Literal('write'),
            Type.Literal('approve'),
            Type.Literal('force'),
            Type.Literal('proxy'),
            Type.Literal('administer'),
          ]),
          cluster: Type.Optional(Type.String({ description: 'a cluster name' })),
          service: Type.Optional(Type.String({ description: "a service id (its cluster is the service's)" })),
          pipeline: Type.Optional(Type.String({ description: 'a pipeline name' })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 500 },
    ),
  },
  { additionalProperties: false },
);
export const AccessReviewResultSchema = Type.Object({ allowed: Type.Array(Type.Boolean()) });

export const NewUserSchema = Type.Object(
  { name: UserName, password: Type.String({ minLength: 8 }), groups: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);
export const UserUpdateSchema = Type.Object(
  { password: Type.Optional(Type.String({ minLength: 8 })), groups: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);
export const UserSchema = Type.Object({ name: Type.String(), groups: Type.Array(Type.String()), createdAt: Time });

export const RoleBindingUpsertSchema = Type.Object(
  {
    role: RoleSchema,
    subjects: Type.Array(
      Type.Object(
        { kind: Type.Union([Type.Literal('user'), Type.Literal('group')]), name: Type.String() },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
    scope: ScopeSchema,
  },
  { additionalProperties: false },
);
export const RoleBindingSchema = Type.Object({
  name: Type.String(),
  role: RoleSchema,
  subjects: Type.Array(Type.Object({ kind: Type.String(), name: Type.String() })),
  scope: ScopeSchema,
  createdAt: Time,
  updatedAt: Time,
});

export const NewTokenSchema = Type.Object({ name: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false });
export const CreatedTokenSchema = Type.Object({ token: Type.String({ description: 'shown only now' }) });

export const AuditQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })) });
export const AuditEventSchema = Type.Object({
  at: Time,
  actor: Type.String(),
  action: Type.String(),
  target: Type.String(),
  status: Type.Integer(),
});
