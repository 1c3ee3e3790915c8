import { describe, expect, it } from 'vitest';
import { DURATION_PATTERN, parseDuration, parseSafeDuration, SAFE_DURATION_PATTERN } from './duration.ts';

describe('parseDuration', () => {
  it("reads Go's durations, in milliseconds", () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('0s')).toBe(0);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('.5s')).toBe(500);
    expect(parseDuration('2us')).toBeCloseTo(0.002);
    expect(parseDuration('3µs')).toBeCloseTo(0.003);
    expect(parseDuration('4μs')).toBeCloseTo(0.004);
    expect(parseDuration('5ns')).toBeCloseTo(0.000005);
    expect(parseDuration('1m0.5s')).toBe(60_500);
  });

  it('refuses what Go refuses, and signs', () => {
    for (const text of ['', '1', '00', 's', '.s', '1d', '1 s', '-1s', '+1s', '1h 30m', '10sec', 'never']) {
      expect(() => parseDuration(text), text).toThrow(`invalid duration '${text}'`);
    }
  });

  it('takes never as a SafeDuration', () => {
    expect(parseSafeDuration('never')).toBe(Number.POSITIVE_INFINITY);
    expect(parseSafeDuration('10m')).toBe(600_000);
  });

  it('gives the CRDs the grammar the parser reads', () => {
    const duration = new RegExp(DURATION_PATTERN);
    const safe = new RegExp(SAFE_DURATION_PATTERN);
    for (const text of ['0', '10us', '1h30m', '1.5s']) expect(duration.test(text) && safe.test(text), text).toBe(true);
    for (const text of ['never', '-1s', '1']) expect(duration.test(text), text).toBe(false);
    expect(safe.test('never')).toBe(true);
  });
});
