/**
 * Previews (issue 43, part 1): a pending change to a service (its source at another ref, a pipeline's promotion, a
 * global service's template edit), rendered and dry-run by the service's agent against its live cluster.
 */
import { Type, type Static } from 'typebox';
import { Time } from './common.ts';
import { AgentServiceSchema } from './agent.ts';

export const NewPreviewSchema = Type.Object(
  {
    ref: Type.String({
      minLength: 1,
      description: 'a branch, tag or commit of the service’s repository; for a helm source without git, a chart version or range',
    }),
  },
  { additionalProperties: false },
);

/** What the agent found: per object what a sync would do, and the errors of the render or the dry run. */
export const PreviewResultSchema = Type.Object(
  {
    create: Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 10_000, description: 'objects a sync would create' }),
    change: Type.Array(Type.Object({ object: Type.String({ maxLength: 1000 }), diff: Type.String({ maxLength: 65_536 }) }), {
      maxItems: 10_000,
      description: 'objects a sync would change, with their diff (secrets masked)',
    }),
    delete: Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 10_000, description: 'objects a sync would prune' }),
    errors: Type.Array(Type.String({ maxLength: 4000 }), { maxItems: 1000 }),
  },
  { additionalProperties: false },
);

export const PreviewSchema = Type.Object({
  id: Type.String(),
  cluster: Type.String(),
  service: Type.String(),
  ref: Type.String(),
  commit: Type.String(),
  state: Type.Union([Type.Literal('PENDING'), Type.Literal('DONE'), Type.Literal('FAILED')]),
  result: Type.Union([PreviewResultSchema, Type.Null()]),
  requestedBy: Type.String(),
  createdAt: Time,
  finishedAt: Type.Union([Time, Type.Null()]),
  expiresAt: Type.String({ description: 'ISO-8601 UTC time after which a PENDING preview fails and a DONE one is not reused' }),
});

/** A preview as its agent gets it: the service as a sync would get it, at the preview's source. */
export const AgentPreviewSchema = Type.Object({ id: Type.String(), service: AgentServiceSchema });
export type AgentPreview = Static<typeof AgentPreviewSchema>;

export const PreviewReportSchema = Type.Object(
  { state: Type.Union([Type.Literal('DONE'), Type.Literal('FAILED')]), result: PreviewResultSchema },
  { additionalProperties: false },
);
export type PreviewReport = Static<typeof PreviewReportSchema>;
