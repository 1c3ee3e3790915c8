/**
 * /v1/contexts: service contexts (Plural's ServiceContext), named JSON configuration that services bind by name and
 * their Liquid templates read as `contexts.<name>`. Anyone with a token reads them (they are not secret); admins
 * write. Changing a context's configuration adds a revision to every service bound to it and kicks their agents,
 * so what the clusters run follows the context; a bound context cannot be deleted (409 naming what binds it).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import type { Database } from '../../store/schema.ts';
import {
  contextBindings,
  deleteServiceContext,
  getServiceContext,
  listServiceContexts,
  missingContexts,
  type ServiceContext,
  upsertServiceContext,
} from '../../store/service-contexts.ts';
import { reviseService } from '../../store/revisions.ts';
import type { Service } from '../../store/services.ts';
import { userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { ErrorResponses } from '../../api/common.ts';
import { ContextParams, ContextUpsertSchema, ServiceContextSchema } from '../../api/contexts.ts';

export interface ContextRouteDeps {
  db: Kysely<Database>;
  /** A bound service got a new revision: its agent should hear of it now. */
  onServiceChange: (service: Service) => void;
}

export function contextRoutes(app: FastifyInstance, deps: ContextRouteDeps): void {
  const { db } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['contexts'];
  const path = '/v1/contexts/:name';

  api.get('/v1/contexts', { ...readers, schema: { tags, response: { 200: Type.Array(ServiceContextSchema), ...errors } } }, async () =>
    Promise.all((await listServiceContexts(db)).map((context) => toApiContext(db, context))),
  );

  api.get(
    path,
    { ...readers, schema: { tags, params: ContextParams, response: { 200: ServiceContextSchema, ...errors } } },
    async (request) => toApiContext(db, await getServiceContext(db, request.params.name)),
  );

  api.put(
    path,
    {
      ...admins,
      schema: {
        tags,
        params: ContextParams,
        body: ContextUpsertSchema,
        response: { 200: ServiceContextSchema, 201: ServiceContextSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const { context, created, changed } = await upsertServiceContext(db, name, request.body.configuration);
      if (changed && !created) await reviseBoundServices(deps, name, request.user?.name ?? 'unknown');
      return reply.code(created ? 201 : 200).send(await toApiContext(db, context));
    },
  );

  api.delete(
    path,
    { ...admins, schema: { tags, params: ContextParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      const { name } = request.params;
      await getServiceContext(db, name);
      const bindings = await contextBindings(db, name);
      if (bindings.length > 0) {
        const names = bindings.map((binding) => `${binding.kind} ${binding.name}`).join(', ');
        throw new HttpError(409, `context ${name} is bound by ${names}; unbind it first`, 'params.name');
      }
      await deleteServiceContext(db, name);
      return reply.code(204).send(null);
    },
  );
}

/**
 * The context names a request binds, checked to exist.
 * @param field where the request carries them, e.g. `body.contexts`; an unknown name is named as `<field>.<index>`.
 * @throws HttpError 400 for a context that does not exist.
 */
export async function checkedContexts(db: Kysely<Database>, names: string[] | undefined, field: string): Promise<string[] | undefined> {
  if (names === undefined) return undefined;
  const [missing] = await missingContexts(db, names);
  if (missing !== undefined) {
    throw new HttpError(
      400,
      `context ${JSON.stringify(missing)} does not exist (gantry context set)`,
      `${field}.${names.indexOf(missing)}`,
    );
  }
  return names;
}

/** One revision per live service bound to the context, each kicked to its agent. */
async function reviseBoundServices(deps: ContextRouteDeps, name: string, by: string): Promise<void> {
  for (const binding of await contextBindings(deps.db, name)) {
    if (binding.kind !== 'service') continue;
    deps.onServiceChange(await reviseService(deps.db, binding.id, { by, message: `context ${name} updated` }));
  }
}

async function toApiContext(db: Kysely<Database>, context: ServiceContext): Promise<Static<typeof ServiceContextSchema>> {
  const bindings = await contextBindings(db, context.name);
  return { ...context, boundBy: bindings.map((binding) => (binding.kind === 'service' ? binding.name : `globalservice/${binding.name}`)) };
}
