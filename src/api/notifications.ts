/**
 * Notifications (Plural's notification sinks and routers): sinks are where messages are posted (a Slack or Teams
 * incoming webhook, or a signed JSON webhook; their addresses and keys are sealed, never returned), routers send the fleet
 * events they name (events.ts), filtered by cluster, service or a regular expression, to sinks.
 */
import { Type, type Static } from 'typebox';
import { Name, Time } from './common.ts';
import { RoutedEventSchema } from './events.ts';

export const SinkUpsertSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('slack'), Type.Literal('teams'), Type.Literal('webhook')], {
      description: 'Slack incoming webhook, Microsoft Teams incoming webhook (an Adaptive Card), or a generic JSON webhook',
    }),
    url: Type.String({ pattern: '^https?://.+', description: 'where messages are posted; sealed, never returned' }),
    hmacKey: Type.Optional(Type.String({ minLength: 16, description: 'webhook: signs the body (X-Signature: sha256=<hex>); sealed' })),
  },
  { additionalProperties: false },
);
export type SinkUpsertBody = Static<typeof SinkUpsertSchema>;

export const SinkSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  createdAt: Time,
  updatedAt: Time,
});

const RouterFilterSchema = Type.Object(
  {
    clusterId: Type.Optional(Type.String({ minLength: 1 })),
    serviceId: Type.Optional(Type.String({ minLength: 1 })),
    regex: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'over <cluster>/<service>, or <cluster> for cluster events' }),
    ),
  },
  { additionalProperties: false },
);

export const RouterUpsertSchema = Type.Object(
  {
    events: Type.Array(RoutedEventSchema, { minItems: 1, uniqueItems: true }),
    filters: Type.Optional(Type.Array(RouterFilterSchema, { maxItems: 50, description: 'none: every event; else any that matches' })),
    sinks: Type.Array(Name, { minItems: 1, uniqueItems: true, description: 'names of notification sinks' }),
  },
  { additionalProperties: false },
);
export type RouterUpsertBody = Static<typeof RouterUpsertSchema>;

export const RouterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  events: Type.Array(Type.String()),
  filters: Type.Array(RouterFilterSchema),
  sinks: Type.Array(Type.String()),
  createdAt: Time,
  updatedAt: Time,
});
