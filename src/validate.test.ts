import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { validate } from './validate.ts';

const Schema = Type.Object(
  { name: Type.String(), nested: Type.Optional(Type.Object({ a: Type.Number() }, { additionalProperties: false })) },
  { additionalProperties: false },
);

describe('validate', () => {
  it('names the file, the field path and the problem', () => {
    expect(() => validate(Schema, { name: 1, nested: { a: 'x', b: 2 } }, 'f.yaml')).toThrow(
      "f.yaml: name: must be string\nf.yaml: nested: unknown field 'b'\nf.yaml: nested.a: must be number",
    );
  });

  // Found by test/fuzz/deployment-project.test.ts: TypeBox stops after 8 errors, which past 8 unknown fields left only
  // `false`-schema errors, all filtered out, and an error with an empty message.
  it('names unknown fields when there are more than 8 of them', () => {
    const value = {
      name: 'x',
      nested: { a: 1, ...Object.fromEntries(['" "', '!', '#', '$', '%', '&', "'", '(', ')'].map((key) => [key, 0])) },
    };
    let message = '';
    try {
      validate(Schema, value, 'deployment.yaml');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("deployment.yaml: nested: unknown field '!'");
  });
});
