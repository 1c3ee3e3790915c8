/**
 * /v1/agents/rollout: upgrades of the fleet's agents, wave by wave (kept-agents.ts, rollouts.ts): start one, see
 * the newest, pause, resume or abort it. Admins only: a rollout names every cluster of the fleet.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { AgentRolloutActionParams, AgentRolloutRequestSchema, RolloutSchema } from '../../api/rollouts.ts';
import { ErrorResponses } from '../../api/common.ts';
import { HttpError } from '../../http/errors.ts';
import { rolloutProblem } from '../../rollout/plan.ts';
import { currentRollout } from '../../store/rollouts.ts';
import type { Database } from '../../store/schema.ts';
import { GANTRY_VERSION } from '../../version.ts';
import { requestUser, userAccess } from '../auth.ts';
import type { KeptAgents } from '../kept-agents.ts';
import { agentsSubject, type RolloutRunner } from '../rollouts.ts';

export function agentRolloutRoutes(
  app: FastifyInstance,
  deps: { db: Kysely<Database>; agents: KeptAgents; rollouts: RolloutRunner },
): void {
  const { db } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['agents'];
  /** The subject of the newest agents' rollout (its version), or of `version` when there has been none. */
  const newest = async (version = GANTRY_VERSION) => {
    const rollout = await currentRollout(db, { agentVersion: version });
    return agentsSubject(rollout && 'agentVersion' in rollout.owner ? rollout.owner.agentVersion : version);
  };

  api.post(
    '/v1/agents/rollout',
    {
      ...admins,
      schema: {
        tags,
        description:
          "Upgrades every agent the server keeps to a version (default the server's own), wave by wave; supersedes the " +
          "agents' rollout under way. A cluster is done once its agent pings with the version.",
        body: AgentRolloutRequestSchema,
        response: { 201: RolloutSchema, ...errors },
      },
    },
    async (request, reply) => {
      const problem = rolloutProblem(request.body.rollout);
      if (problem) throw new HttpError(400, problem.message, `body.rollout.${problem.field}`);
      const subject = await deps.agents.upgrade(request.body.version ?? GANTRY_VERSION, request.body.rollout, requestUser(request).name);
      return reply.code(201).send(await deps.rollouts.status(subject, true));
    },
  );

  api.get('/v1/agents/rollout', { ...admins, schema: { tags, response: { 200: RolloutSchema, ...errors } } }, async () =>
    deps.rollouts.status(await newest(), false),
  );

  api.post(
    '/v1/agents/rollout/:action',
    { ...admins, schema: { tags, params: AgentRolloutActionParams, response: { 200: RolloutSchema, ...errors } } },
    async (request) => {
      const subject = await newest();
      await deps.rollouts.act(subject, request.params.action, requestUser(request).name);
      return await deps.rollouts.status(subject, true);
    },
  );
}
