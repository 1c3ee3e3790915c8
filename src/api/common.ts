/**
 * The pieces every resource of the fleet API (`gantry server`, /v1) shares: names, tags and times as fields, the
 * error body every route answers with, and the path and query parameters several resources take. The API's
 * request and response shapes are TypeBox schemas, one module per resource in this folder: fastify validates
 * requests against them, /v1/openapi.json is generated from them, and the CLI, the agent, the operator and the UI
 * take their types from them, so all read one contract.
 */
import { Type, type TLiteral, type TUnion } from 'typebox';

/** A DNS label, as cluster and service names become parts of Kubernetes names and kubeconfig contexts. */
export const Name = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lower-case letters, digits and -' });
export const Tags = Type.Record(Type.String({ minLength: 1, maxLength: 63 }), Type.String({ maxLength: 63 }), {
  description: 'String tags, e.g. {"tier": "web"}; global services select clusters by them.',
});
export const Time = Type.String({ description: 'ISO-8601 UTC time' });

/**
 * A union of the string literals of a const array (`anyOf` of `const`s, as `Type.Union` of `Type.Literal`s gives),
 * typed as that union, so the array a value list is read from and the schema it is validated by are one.
 */
export function LiteralUnion<const Values extends readonly string[]>(
  values: Values,
): TUnion<{ -readonly [K in keyof Values]: TLiteral<Values[K]> }> {
  return Type.Union(values.map((value) => Type.Literal(value))) as never;
}

export const ErrorSchema = Type.Object({
  message: Type.String(),
  field: Type.Optional(Type.String({ description: 'the offending field, e.g. body.name, for bad input' })),
});

/** The error answers every route documents (see src/http/errors.ts). */
export const ErrorResponses = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

/** A resource by name in the path (global services, sinks, routers, users, role bindings). */
export const NameParams = Type.Object({ name: Type.String() });

/** A resource by id in the path (a service for its agent, a Helm repository). */
export const ServiceIdParams = Type.Object({ id: Type.String() });

/** A flag in a query string: query values are not coerced (see src/server/app.ts), and "true"/"false" is what a URL carries. */
export const TrueOrFalse = Type.Union([Type.Literal('true'), Type.Literal('false')]);
export const ConfirmQuery = Type.Object({
  confirm: Type.Optional(TrueOrFalse),
});
