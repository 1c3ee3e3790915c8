/**
 * The notification API (Plural's NotificationSink and NotificationRouter): admins write sinks and routers, readers
 * list them; a sink's address and HMAC key are sealed and never returned. A router naming a sink that does not exist,
 * or with a regex that does not compile, is refused (400 naming the field).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { deleteRouter, deleteSink, getSink, listRouters, listSinks, upsertRouter, upsertSink } from '../../store/notifications.ts';
import { NotFoundError } from '../../store/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { ErrorResponses, NameParams } from '../../api/common.ts';
import { RouterSchema, type RouterUpsertBody, RouterUpsertSchema, SinkSchema, SinkUpsertSchema } from '../../api/notifications.ts';

export function notificationRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; box: SecretBox }): void {
  const { db, box } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['notifications'];

  api.get('/v1/notifications/sinks', { ...readers, schema: { tags, response: { 200: Type.Array(SinkSchema), ...errors } } }, async () =>
    listSinks(db),
  );
  api.put(
    '/v1/notifications/sinks/:name',
    { ...admins, schema: { tags, params: NameParams, body: SinkUpsertSchema, response: { 200: SinkSchema, ...errors } } },
    async (request) => {
      const { type, url, hmacKey } = request.body;
      return await upsertSink(db, box, { name: request.params.name, type, configuration: { url, ...(hmacKey ? { hmacKey } : {}) } });
    },
  );
  api.delete(
    '/v1/notifications/sinks/:name',
    { ...admins, schema: { tags, params: NameParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      if (!(await deleteSink(db, request.params.name))) throw new HttpError(404, `notification sink ${request.params.name} not found`);
      return reply.code(204).send(null);
    },
  );

  api.get('/v1/notifications/routers', { ...readers, schema: { tags, response: { 200: Type.Array(RouterSchema), ...errors } } }, async () =>
    listRouters(db),
  );
  api.put(
    '/v1/notifications/routers/:name',
    { ...admins, schema: { tags, params: NameParams, body: RouterUpsertSchema, response: { 200: RouterSchema, ...errors } } },
    async (request) => {
      await checkRouter(db, request.body);
      const { events, filters = [], sinks } = request.body;
      return await upsertRouter(db, { name: request.params.name, events, filters, sinks });
    },
  );
  api.delete(
    '/v1/notifications/routers/:name',
    { ...admins, schema: { tags, params: NameParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      if (!(await deleteRouter(db, request.params.name))) throw new HttpError(404, `notification router ${request.params.name} not found`);
      return reply.code(204).send(null);
    },
  );
}

/** @throws HttpError 400 naming a sink that does not exist or a regex that does not compile. */
async function checkRouter(db: Kysely<Database>, body: RouterUpsertBody): Promise<void> {
  for (const [index, name] of body.sinks.entries()) {
    await getSink(db, name).catch((error: unknown) => {
      if (error instanceof NotFoundError) throw new HttpError(400, `notification sink ${name} not found`, `body.sinks.${index}`);
      throw error;
    });
  }
  for (const [index, filter] of (body.filters ?? []).entries()) {
    if (filter.regex === undefined) continue;
    try {
      new RegExp(filter.regex);
    } catch (error) {
      throw new HttpError(400, `not a regular expression: ${(error as Error).message}`, `body.filters.${index}.regex`);
    }
  }
}
