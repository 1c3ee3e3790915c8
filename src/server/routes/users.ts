/**
 * People and their rights: logging in and out (the session cookie), who am I, an access review the UI asks before
 * showing an action (as Kubernetes' SelfSubjectAccessReview), a user's own API tokens, and, for admins, users,
 * role bindings and the audit log.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { createUserToken } from '../../store/api-tokens.ts';
import { listAuditEvents } from '../../store/audit.ts';
import { type Cluster, listClusters } from '../../store/clusters.ts';
import { deleteRoleBinding, getRoleBinding, grantsOf, listRoleBindings, putRoleBinding } from '../../store/role-bindings.ts';
import type { Database } from '../../store/schema.ts';
import { getServiceById } from '../../store/services.ts';
import { createSession, endSession } from '../../store/sessions.ts';
import {
  createUser,
  deleteUser,
  getUser,
  listUsers,
  LoginLockedError,
  MIN_PASSWORD_LENGTH,
  updateUser,
  verifyUserPassword,
} from '../../store/users.ts';
import { mayDo, requestUser, requireUser, SESSION_COOKIE, userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import type { Target } from '../../rights.ts';
import { ErrorResponses, ErrorSchema, NameParams } from '../../api/common.ts';
import {
  AccessReviewResultSchema,
  AccessReviewSchema,
  AuditEventSchema,
  AuditQuery,
  CreatedTokenSchema,
  IdentitySchema,
  LoginSchema,
  NewTokenSchema,
  NewUserSchema,
  RoleBindingSchema,
  RoleBindingUpsertSchema,
  UserSchema,
  UserUpdateSchema,
} from '../../api/users.ts';

/** How long a browser session lasts, in milliseconds: a working day, as Argo CD's default session does (24 h). */
export const SESSION_LIFETIME_MS = 24 * 60 * 60_000;

/** The body of POST /v1/me/password. */
const PasswordChangeSchema = Type.Object(
  { currentPassword: Type.String({ minLength: 1 }), newPassword: Type.String({ minLength: MIN_PASSWORD_LENGTH }) },
  { additionalProperties: false },
);

/** `publicUrl`: see AppOptions.publicUrl (an https one makes session cookies Secure on every hop). */
export function userRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; publicUrl?: URL | undefined }): void {
  const { db } = deps;
  // 'auto': Secure when the request was https, as the server saw it (X-Forwarded-Proto from a trusted proxy included).
  const secure = deps.publicUrl?.protocol === 'https:' ? true : 'auto';
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { admins } = userAccess(db);
  const signedIn = { onRequest: [requireUser(db)] };
  const errors = ErrorResponses;
  const tags = ['users'];

  api.post(
    '/v1/login',
    { schema: { tags, security: [], body: LoginSchema, response: { 200: IdentitySchema, ...errors, 429: ErrorSchema } } },
    async (request, reply) => {
      const user = await verifyUserPassword(db, request.body.username, request.body.password, new Date(), request.ip).catch(
        (error: unknown) => lockedReply(error, reply),
      );
      if (!user) throw new HttpError(401, 'wrong username or password');
      const session = await createSession(db, user.id, SESSION_LIFETIME_MS);
      void reply.setCookie(SESSION_COOKIE, session, {
        httpOnly: true,
        sameSite: 'strict',
        secure,
        path: '/',
        maxAge: SESSION_LIFETIME_MS / 1000,
      });
      return { kind: 'user' as const, name: user.name, groups: user.groups, grants: await grantsOf(db, user) };
    },
  );

  api.post('/v1/logout', { schema: { tags, security: [], response: { 204: Type.Null() } } }, async (request, reply) => {
    const session = request.cookies[SESSION_COOKIE];
    if (session !== undefined) await endSession(db, session);
    void reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.code(204).send(null);
  });

  api.get('/v1/me', { ...signedIn, schema: { tags, response: { 200: IdentitySchema, ...errors } } }, async (request) => {
    const { kind, name, groups, grants } = requestUser(request);
    return { kind, name, groups, grants };
  });

  api.post(
    '/v1/access-review',
    { ...signedIn, schema: { tags, body: AccessReviewSchema, response: { 200: AccessReviewResultSchema, ...errors } } },
    async (request) => {
      const clusters = await listClusters(db);
      const allowed = await Promise.all(
        request.body.checks.map(async (check) => {
          const target = await reviewTarget(db, check, clusters);
          return target !== undefined && mayDo(request, check.action, target);
        }),
      );
      return { allowed };
    },
  );

  api.post(
    '/v1/me/password',
    { ...signedIn, schema: { tags, body: PasswordChangeSchema, response: { 204: Type.Null(), ...errors, 429: ErrorSchema } } },
    async (request, reply) => {
      const user = requestUser(request);
      if (user.kind !== 'user') throw new HttpError(403, 'a token with a role of its own has no password');
      // The current password is asked for, and counted as a login is, so a stolen session cannot take the account.
      const checked = await verifyUserPassword(db, user.name, request.body.currentPassword, new Date(), request.ip).catch(
        (error: unknown) => lockedReply(error, reply),
      );
      if (!checked) throw new HttpError(403, 'the current password is wrong', 'body.currentPassword');
      await updateUser(db, user.name, { password: request.body.newPassword }, request.cookies[SESSION_COOKIE]);
      return reply.code(204).send(null);
    },
  );

  api.post(
    '/v1/me/tokens',
    { ...signedIn, schema: { tags, body: NewTokenSchema, response: { 201: CreatedTokenSchema, ...errors } } },
    async (request, reply) => {
      const user = requestUser(request);
      if (user.kind !== 'user') throw new HttpError(403, 'a token with a role of its own cannot make tokens; log in as a user');
      return reply.code(201).send({ token: await createUserToken(db, user.id, request.body.name) });
    },
  );

  api.get('/v1/users', { ...admins, schema: { tags, response: { 200: Type.Array(UserSchema), ...errors } } }, async () =>
    (await listUsers(db)).map(({ name, groups, createdAt }) => ({ name, groups, createdAt })),
  );

  api.post(
    '/v1/users',
    { ...admins, schema: { tags, body: NewUserSchema, response: { 201: UserSchema, ...errors } } },
    async (request, reply) => {
      const { name, groups, createdAt } = await createUser(db, request.body);
      return reply.code(201).send({ name, groups, createdAt });
    },
  );

  api.patch(
    '/v1/users/:name',
    { ...admins, schema: { tags, params: NameParams, body: UserUpdateSchema, response: { 200: UserSchema, ...errors } } },
    async (request) => {
      await getUser(db, request.params.name);
      const { name, groups, createdAt } = await updateUser(db, request.params.name, request.body);
      return { name, groups, createdAt };
    },
  );

  api.delete(
    '/v1/users/:name',
    { ...admins, schema: { tags, params: NameParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      if (request.params.name === requestUser(request).name && requestUser(request).kind === 'user')
        throw new HttpError(409, 'you cannot delete yourself; another admin can');
      await deleteUser(db, request.params.name);
      return reply.code(204).send(null);
    },
  );

  api.get('/v1/role-bindings', { ...admins, schema: { tags, response: { 200: Type.Array(RoleBindingSchema), ...errors } } }, async () =>
    listRoleBindings(db),
  );

  api.put(
    '/v1/role-bindings/:name',
    { ...admins, schema: { tags, params: NameParams, body: RoleBindingUpsertSchema, response: { 200: RoleBindingSchema, ...errors } } },
    async (request) => putRoleBinding(db, request.params.name, request.body),
  );

  api.get(
    '/v1/role-bindings/:name',
    { ...admins, schema: { tags, params: NameParams, response: { 200: RoleBindingSchema, ...errors } } },
    async (request) => getRoleBinding(db, request.params.name),
  );

  api.delete(
    '/v1/role-bindings/:name',
    { ...admins, schema: { tags, params: NameParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await deleteRoleBinding(db, request.params.name);
      return reply.code(204).send(null);
    },
  );

  api.get(
    '/v1/audit',
    { ...admins, schema: { tags, querystring: AuditQuery, response: { 200: Type.Array(AuditEventSchema), ...errors } } },
    async (request) => (await listAuditEvents(db, Number(request.query.limit ?? 100))).map(({ id: _id, ...event }) => event),
  );
}

/** A LoginLockedError as a 429 with Retry-After (seconds, RFC 9110); any other error as it is. */
function lockedReply(error: unknown, reply: FastifyReply): never {
  if (!(error instanceof LoginLockedError)) throw error;
  void reply.header('retry-after', String(Math.max(1, Math.ceil((error.retryAt.getTime() - Date.now()) / 1000))));
  throw new HttpError(429, error.message);
}

/** The target an access-review check names, or undefined when it names something that does not exist. */
async function reviewTarget(
  db: Kysely<Database>,
  check: { cluster?: string | undefined; service?: string | undefined; pipeline?: string | undefined },
  clusters: readonly Cluster[],
): Promise<Target | undefined> {
  if (check.pipeline !== undefined) return { pipeline: check.pipeline };
  if (check.service !== undefined) {
    const service = await getServiceById(db, check.service).catch(() => undefined);
    const cluster = service && clusters.find((candidate) => candidate.id === service.clusterId);
    return service && cluster ? { cluster, service: { name: service.name } } : undefined;
  }
  if (check.cluster !== undefined) {
    const cluster = clusters.find((candidate) => candidate.name === check.cluster);
    return cluster ? { cluster } : undefined;
  }
  return {};
}
