/**
 * The audit log's writing side: every mutating user request is recorded once answered, by the onResponse hook for
 * ordinary routes and by the auth proxy for the requests it streams (fastify runs no onResponse hook for a hijacked
 * reply). Agents' reports are the fleet's state, not anyone's action, and are left out. A failed write is logged; it
 * never fails the request.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { recordAuditEvent } from '../store/audit.ts';
import type { Database } from '../store/schema.ts';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request with this method changes something (and so is audited, and has a body to pass on). */
export function isMutating(method: string): boolean {
  return !READ_METHODS.has(method);
}

/** Records the request's route, path and `status` as done by `actor` (`user:NAME`, `token:NAME`, `anonymous`). */
export async function auditRequest(db: Kysely<Database>, request: FastifyRequest, actor: string, status: number): Promise<void> {
  await recordAuditEvent(db, {
    at: new Date().toISOString(),
    actor,
    action: `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}`,
    target: request.url.split('?')[0] ?? request.url,
    status,
  }).catch((error: unknown) => request.log.error({ err: error }, 'audit event not recorded'));
}

/** The onResponse hook auditing every mutating /v1 request but the agents'. */
export function registerAuditLog(app: FastifyInstance, db: Kysely<Database>): void {
  app.addHook('onResponse', async (request, reply) => {
    if (!isMutating(request.method) || !request.url.startsWith('/v1/') || request.url.startsWith('/v1/agent/')) return;
    const attempted = (request.body as { username?: unknown } | undefined)?.username;
    const actor = request.user
      ? `${request.user.kind}:${request.user.name}`
      : request.routeOptions.url === '/v1/login' && typeof attempted === 'string'
        ? `user:${attempted}`
        : 'anonymous';
    await auditRequest(db, request, actor, reply.statusCode);
  });
}
