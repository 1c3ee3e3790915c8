import { describe, expect, it } from 'vitest';
import { withCondition } from './conditions.ts';

describe('withCondition', () => {
  it('keeps lastTransitionTime while the status stays, and moves it when the status flips', () => {
    const first = withCondition(undefined, { type: 'Ready', status: 'True', reason: 'A', message: 'one' });
    const same = withCondition(first, { type: 'Ready', status: 'True', reason: 'B', message: 'two' });
    expect(same).toHaveLength(1);
    expect(same[0]?.lastTransitionTime).toBe(first[0]?.lastTransitionTime);
    expect(same[0]?.message).toBe('two');
    const flipped = withCondition([{ ...first[0]!, lastTransitionTime: '2000-01-01T00:00:00Z' }], {
      type: 'Ready',
      status: 'False',
      reason: 'C',
      message: 'three',
    });
    expect(flipped[0]?.lastTransitionTime).not.toBe('2000-01-01T00:00:00Z');
  });

  it('leaves other conditions alone', () => {
    const both = withCondition(withCondition(undefined, { type: 'Reconciling', status: 'True', reason: 'P', message: '' }), {
      type: 'Ready',
      status: 'True',
      reason: 'S',
      message: '',
    });
    expect(both.map((condition) => condition.type).sort()).toEqual(['Ready', 'Reconciling']);
  });
});
