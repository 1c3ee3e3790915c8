/**
 * /v1/globalservices: services kept on every cluster a tag (and distro) selector picks. A change that would delete
 * more than the server's share of one global service's copies answers 409 with the list, and goes ahead only when
 * repeated with ?confirm=true (see global-services.ts).
 */
import { AGENT_SERVICE_NAME } from '../kept-agents.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { listClusters } from '../../store/clusters.ts';
import { getGlobalService, type GlobalService, listGlobalServices, type ServiceTemplate } from '../../store/global-services.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { listServices } from '../../store/services.ts';
import { mayDo, requestUser, userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import type { GlobalServices } from '../global-services.ts';
import type { ServiceSources } from '../service-sources.ts';
import { checkedSpec, checkSecretValues } from '../service-specs.ts';
import { checkOutboundUrl, type OutboundPolicy } from '../outbound.ts';
import { checkedContexts } from './contexts.ts';
import { toApiPreview } from './previews.ts';
import { RolloutActionParams, RolloutSchema, type RolloutSpec } from '../../api/rollouts.ts';
import { rolloutProblem } from '../../rollout/plan.ts';
import { globalServiceSubject, type RolloutRunner } from '../rollouts.ts';
import { PreviewSchema } from '../../api/previews.ts';
import { ConfirmQuery, ErrorResponses, NameParams } from '../../api/common.ts';
import {
  DeleteGlobalServiceQuery,
  GlobalServicePreviewSchema,
  GlobalServiceSchema,
  GlobalServiceUpdateSchema,
  NewGlobalServiceSchema,
} from '../../api/global-services.ts';

type TemplateBody = Static<typeof NewGlobalServiceSchema>['template'];

export function globalServiceRoutes(
  app: FastifyInstance,
  deps: {
    db: Kysely<Database>;
    box: SecretBox;
    globals: GlobalServices;
    sources: ServiceSources;
    outbound: OutboundPolicy;
    rollouts: RolloutRunner;
  },
): void {
  const { db, box, globals, sources } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['globalservices'];
  const template = async (body: TemplateBody): Promise<ServiceTemplate> => {
    // Its copies take this name, which is each cluster's own agent service's (kept-agents.ts).
    if (body.name === AGENT_SERVICE_NAME)
      throw new HttpError(400, `the name ${AGENT_SERVICE_NAME} is kept for each cluster's own agent`, 'body.template.name');
    await checkedContexts(db, body.contexts, 'body.template.contexts');
    const spec = await checkedSpec(sources, body, body.name, 'body.template');
    // Admins only reach here, but the server's network position is not theirs to give either.
    if (spec.helm) await checkOutboundUrl(spec.helm.url, deps.outbound, 'body.template.helm.url');
    checkSecretValues(spec, body.secretValues, 'body.template');
    return {
      name: body.name,
      ...spec,
      ...(body.configuration ? { configuration: body.configuration } : {}),
      ...(body.secretValues ? { secretValues: body.secretValues } : {}),
    };
  };
  const show = async (global: GlobalService, request: FastifyRequest) => toApi(db, global, request);

  api.get(
    '/v1/globalservices',
    { ...readers, schema: { tags, response: { 200: Type.Array(GlobalServiceSchema), ...errors } } },
    async (request) =>
      (await Promise.all((await listGlobalServices(db, box)).map((global) => show(global, request)))).filter(inScope(request)),
  );

  api.post(
    '/v1/globalservices',
    { ...admins, schema: { tags, body: NewGlobalServiceSchema, response: { 201: GlobalServiceSchema, ...errors } } },
    async (request, reply) => {
      const { name, tags: selector, distro, template: body, rollout, ignoreClusters } = request.body;
      checkRollout(rollout);
      const created = await globals.create({
        name,
        tags: selector,
        distro,
        template: await template(body),
        rollout: rollout ?? null,
        ignoreClusters: ignoreClusters ?? [],
      });
      return reply.code(201).send(await show(created, request));
    },
  );

  api.get(
    '/v1/globalservices/:name',
    { ...readers, schema: { tags, params: NameParams, response: { 200: GlobalServiceSchema, ...errors } } },
    async (request) => {
      const shown = await show(await getGlobalService(db, box, request.params.name), request);
      // 403 as services and clusters out of scope answer; the message names what was refused and why.
      if (!inScope(request)(shown)) {
        const user = requestUser(request);
        throw new HttpError(
          403,
          `${user.kind} ${user.name} may not read global service ${shown.name}: none of its services is in their scope`,
        );
      }
      return shown;
    },
  );

  api.patch(
    '/v1/globalservices/:name',
    {
      ...admins,
      schema: {
        tags,
        params: NameParams,
        querystring: ConfirmQuery,
        body: GlobalServiceUpdateSchema,
        response: { 200: GlobalServiceSchema, ...errors },
      },
    },
    async (request) => {
      const body = request.body;
      checkRollout(body.rollout);
      const updated = await globals.update(
        request.params.name,
        {
          ...(body.tags ? { tags: body.tags } : {}),
          ...(body.distro !== undefined ? { distro: body.distro } : {}),
          ...(body.template ? { template: await template(body.template) } : {}),
          ...(body.rollout !== undefined ? { rollout: body.rollout } : {}),
          ...(body.ignoreClusters ? { ignoreClusters: body.ignoreClusters } : {}),
        },
        request.query.confirm === 'true',
      );
      return await show(updated, request);
    },
  );

  api.post(
    '/v1/globalservices/:name/previews',
    {
      ...admins,
      schema: { tags, params: NameParams, body: GlobalServicePreviewSchema, response: { 202: Type.Array(PreviewSchema), ...errors } },
    },
    async (request, reply) => {
      const previews = await globals.preview(request.params.name, await template(request.body.template), requestUser(request).name);
      return reply.code(202).send(previews.map(({ preview, cluster, service }) => toApiPreview(preview, cluster, service)));
    },
  );

  api.get(
    '/v1/globalservices/:name/rollout',
    { ...readers, schema: { tags, params: NameParams, response: { 200: RolloutSchema, ...errors } } },
    async (request) => {
      const global = await getGlobalService(db, box, request.params.name);
      if (!inScope(request)(await show(global, request))) {
        const user = requestUser(request);
        throw new HttpError(
          403,
          `${user.kind} ${user.name} may not read global service ${global.name}: none of its services is in their scope`,
        );
      }
      return await deps.rollouts.status(globalServiceSubject(global), !!global.rollout);
    },
  );

  api.post(
    '/v1/globalservices/:name/rollout/:action',
    { ...admins, schema: { tags, params: RolloutActionParams, response: { 200: RolloutSchema, ...errors } } },
    async (request) => {
      const global = await getGlobalService(db, box, request.params.name);
      await deps.rollouts.act(globalServiceSubject(global), request.params.action, requestUser(request).name);
      return await deps.rollouts.status(globalServiceSubject(global), !!global.rollout);
    },
  );

  api.delete(
    '/v1/globalservices/:name',
    { ...admins, schema: { tags, params: NameParams, querystring: DeleteGlobalServiceQuery, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await globals.delete(request.params.name, { detach: request.query.detach === 'true', confirm: request.query.confirm === 'true' });
      return reply.code(204).send(null);
    },
  );
}

/**
 * Whether a global service is in the caller's scope: a binding on `all`, or one that reads at least one of its
 * copies (the service it made on a cluster); toApi already left out the copies the caller may not read.
 */
function inScope(request: FastifyRequest): (shown: Static<typeof GlobalServiceSchema>) => boolean {
  const everywhere = requestUser(request).grants.some((grant) => grant.scope === 'all');
  return (shown) => everywhere || shown.services.length > 0;
}

/** The API's view of a global service, its copies only those `request`'s caller may read. */
async function toApi(db: Kysely<Database>, global: GlobalService, request: FastifyRequest): Promise<Static<typeof GlobalServiceSchema>> {
  const [clusters, services] = await Promise.all([listClusters(db), listServices(db)]);
  const { configuration, secretValues, repositoryId, git, helm, ...template } = global.template;
  return {
    id: global.id,
    name: global.name,
    tags: global.tags,
    distro: global.distro,
    ignoreClusters: global.ignoreClusters,
    template: {
      ...template,
      repository: repositoryId ?? null,
      git: git ?? null,
      helm: helm ?? null,
      configuration: Object.keys(configuration ?? {}).sort(),
      secretValues: Object.keys(secretValues ?? {}).sort(),
      contexts: template.contexts ?? [],
    },
    services: services
      .filter((service) => service.ownerId === global.id)
      .flatMap((service) => {
        const cluster = clusters.find((candidate) => candidate.id === service.clusterId);
        if (!cluster || !mayDo(request, 'read', { cluster, service })) return [];
        return [{ cluster: cluster.name, status: service.status, deleting: service.deletedAt !== null }];
      }),
    rollout: global.rollout,
    createdAt: global.createdAt,
  };
}

/** @throws HttpError 400 naming the field of a bad rollout (a duration, a wave named twice, a wave selecting nothing). */
function checkRollout(rollout: RolloutSpec | null | undefined): void {
  const problem = rollout ? rolloutProblem(rollout) : undefined;
  if (problem) throw new HttpError(400, problem.message, `body.rollout.${problem.field}`);
}
