/**
 * Service contexts (/v1/contexts, Plural's service contexts): named JSON objects that services bind and their
 * templates read as `contexts.<name>`.
 */
import { Type, type Static } from 'typebox';
import { Time } from './common.ts';

/** Context names are used in Liquid as `contexts.<name>`, so they keep to letters, digits, - and _. */
export const ContextName = Type.String({
  pattern: '^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$',
  description: 'lower-case letters, digits, - and _',
});

export const ContextConfiguration = Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), {
  description: 'any JSON object; stored as is (not secret: readers see it)',
});

export const ContextParams = Type.Object({ name: ContextName });

export const ContextUpsertSchema = Type.Object({ configuration: ContextConfiguration }, { additionalProperties: false });
export type ContextUpsertBody = Static<typeof ContextUpsertSchema>;

export const ServiceContextSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  configuration: ContextConfiguration,
  boundBy: Type.Array(Type.String(), { description: 'services (cluster/name) and global services binding the context' }),
  createdAt: Time,
  updatedAt: Time,
});
