/**
 * What the store's queries throw for the caller's mistakes; the API maps them to 404 and 409 with a JSON body.
 */

/** The named object does not exist. */
export class NotFoundError extends Error {
  readonly kind: string;
  readonly key: string;

  constructor(kind: string, key: string) {
    super(`${kind} ${JSON.stringify(key)} not found`);
    this.name = 'NotFoundError';
    this.kind = kind;
    this.key = key;
  }
}

/** Another object already has this unique value (`field` names it, e.g. `name`). */
export class ConflictError extends Error {
  readonly kind: string;
  readonly field: string;

  constructor(kind: string, field: string, value: string) {
    super(`a ${kind} with ${field} ${JSON.stringify(value)} already exists`);
    this.name = 'ConflictError';
    this.kind = kind;
    this.field = field;
  }
}
