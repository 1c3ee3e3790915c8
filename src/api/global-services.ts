/**
 * Global services (/v1/global-services, Plural's GlobalService): a service template every cluster whose tags (and
 * distro) match gets a copy of.
 */
import { Type, type Static } from 'typebox';
import { Name, Time, TrueOrFalse } from './common.ts';
import { RolloutSpecSchema } from './rollouts.ts';
import { GitSourceSchema, HelmSourceSchema, RendererSchema, SecretValues, ServiceSourceFields } from './services.ts';

const TemplateSchema = Type.Object(
  { ...ServiceSourceFields, secretValues: Type.Optional(SecretValues) },
  {
    additionalProperties: false,
    description: "what each selected cluster's copy of the service is made from",
  },
);

const IgnoreClusters = Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
  maxItems: 1000,
  uniqueItems: true,
  description: "handles of clusters that get no copy, whatever their tags (Plural's ignoreClusters)",
});

export const NewGlobalServiceSchema = Type.Object(
  {
    name: Name,
    tags: Type.Record(Type.String({ minLength: 1 }), Type.String(), {
      description: 'clusters whose tags include all of these get the service',
    }),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
    template: TemplateSchema,
    rollout: Type.Optional(RolloutSpecSchema),
    ignoreClusters: Type.Optional(IgnoreClusters),
  },
  { additionalProperties: false },
);
export type NewGlobalServiceBody = Static<typeof NewGlobalServiceSchema>;

export const GlobalServiceUpdateSchema = Type.Object(
  {
    tags: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
    distro: Type.Optional(Type.Union([Type.String({ maxLength: 63 }), Type.Null()])),
    template: Type.Optional(TemplateSchema),
    rollout: Type.Optional(Type.Union([RolloutSpecSchema, Type.Null()], { description: 'null: new revisions go to every copy at once' })),
    ignoreClusters: Type.Optional(IgnoreClusters),
  },
  { additionalProperties: false },
);
export const GlobalServicePreviewSchema = Type.Object(
  { template: TemplateSchema },
  { additionalProperties: false, description: 'a template edit to preview on every copy’s cluster; nothing is changed' },
);

export type GlobalServiceUpdateBody = Static<typeof GlobalServiceUpdateSchema>;

export const GlobalServiceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tags: Type.Record(Type.String(), Type.String()),
  distro: Type.Union([Type.String(), Type.Null()]),
  ignoreClusters: Type.Array(Type.String()),
  template: Type.Object({
    name: Type.String(),
    namespace: Type.String(),
    repository: Type.Union([Type.String({ description: 'repository id' }), Type.Null()]),
    git: Type.Union([GitSourceSchema, Type.Null()]),
    helm: Type.Union([HelmSourceSchema, Type.Null()]),
    renderer: RendererSchema,
    configuration: Type.Array(Type.String(), { description: 'configuration keys; values are never returned' }),
    secretValues: Type.Array(Type.String(), { description: 'top-level keys of the secret helm values; values are never returned' }),
    contexts: Type.Array(Type.String()),
  }),
  services: Type.Array(Type.Object({ cluster: Type.String(), status: Type.String(), deleting: Type.Boolean() })),
  rollout: Type.Union([RolloutSpecSchema, Type.Null()]),
  createdAt: Time,
});

export const DeleteGlobalServiceQuery = Type.Object({
  confirm: Type.Optional(TrueOrFalse),
  detach: Type.Optional(TrueOrFalse),
});
