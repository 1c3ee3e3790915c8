/**
 * The helper that makes a schema of a const list of values, and the wire values of the schemas made with it.
 */
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { LiteralUnion } from './common.ts';
import { RoutedEventSchema } from './events.ts';
import { ComponentStateSchema } from './services.ts';

describe('LiteralUnion', () => {
  it('is the union of the literals, as written out by hand', () => {
    expect(LiteralUnion(['a', 'b'])).toEqual(Type.Union([Type.Literal('a'), Type.Literal('b')]));
  });

  it('keeps the wire values of the derived schemas', () => {
    expect(JSON.parse(JSON.stringify(ComponentStateSchema)).anyOf.map((literal: { const: string }) => literal.const)).toEqual([
      'RUNNING',
      'PENDING',
      'FAILED',
      'PAUSED',
    ]);
    expect(RoutedEventSchema.anyOf.map((literal) => literal.const)).toEqual([
      'service.update',
      'cluster.create',
      'cluster.delete',
      'pipeline.update',
      'rollout.update',
      '*',
    ]);
  });
});
