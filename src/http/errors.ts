/**
 * Every API error is JSON `{message, field?}` with the right status: 400 naming the field for bad input, 401/403
 * for credentials, 404/409 from the store, 500 (logged, never detailed to the caller) for anything else.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { ConflictError, NotFoundError } from '../store/errors.ts';

/** An error with an HTTP status, thrown by route handlers and auth. */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly field: string | undefined;

  constructor(statusCode: number, message: string, field?: string) {
    super(message);
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.field = field;
  }
}

interface ValidationIssue {
  instancePath: string;
  message?: string;
  params?: { missingProperty?: string; additionalProperty?: string };
}

export function registerErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.validation) {
      const issue = error.validation[0] as ValidationIssue | undefined;
      const field = validationField(error.validationContext ?? 'body', issue);
      return reply.code(400).send({ message: `${field} ${issue?.message ?? 'is invalid'}`, field });
    }
    if (error instanceof HttpError) return reply.code(error.statusCode).send({ message: error.message, field: error.field });
    if (error instanceof NotFoundError) return reply.code(404).send({ message: error.message });
    if (error instanceof ConflictError) return reply.code(409).send({ message: error.message, field: `body.${error.field}` });
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      // fastify's own client errors: a malformed JSON body, a wrong content type, a body too large.
      return reply.code(error.statusCode).send({ message: error.message });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ message: 'internal error; see the server log' });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ message: `no route ${request.method} ${request.url.split('?')[0]}` }));
}

/** `body.tags.tier`-style path of the first validation issue. */
function validationField(context: string, issue: ValidationIssue | undefined): string {
  const path = (issue?.instancePath ?? '').split('/').filter(Boolean);
  const extra = issue?.params?.missingProperty ?? issue?.params?.additionalProperty;
  if (extra !== undefined) path.push(extra);
  return [context, ...path].join('.');
}
