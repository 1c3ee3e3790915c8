/**
 * Durations in Go's syntax (time.ParseDuration), the form Kluctl's flags and KluctlDeployment fields take: `0`, or
 * one or more decimal numbers each with a unit, `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m`, `h` (`1h30m`, `1.5s`,
 * `500us`). Go also accepts a sign; a negative timeout or interval means nothing here, so signs are refused. The same
 * grammar is the pattern of every duration field of Gantry's CRDs (src/api), so the API server refuses what the
 * controller could not parse.
 */

/** Milliseconds per unit. */
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

const NUMBER = '(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)';
const UNIT = '(?:ns|us|µs|μs|ms|s|m|h)';

/** The whole grammar as an anchored regular expression source, for CRD patterns. */
export const DURATION_PATTERN = `^(?:0|(?:${NUMBER}${UNIT})+)$`;

/** Kluctl's SafeDuration: a duration, or `never`. */
export const SAFE_DURATION_PATTERN = `^(?:never|0|(?:${NUMBER}${UNIT})+)$`;

const WHOLE = new RegExp(DURATION_PATTERN);
const PART = new RegExp(`(${NUMBER})(${UNIT})`, 'g');

/**
 * Parses a duration into milliseconds (fractional below a millisecond).
 * @throws Error naming the text and giving examples, for anything outside the grammar.
 */
export function parseDuration(text: string): number {
  if (!WHOLE.test(text)) throw new Error(`invalid duration '${text}' (examples: 0, 500ms, 30s, 10m, 1h30m)`);
  let total = 0;
  for (const [, number, unit] of text.matchAll(PART)) total += Number(number) * (UNIT_MS[unit as string] as number);
  return total;
}

/**
 * Parses a SafeDuration: `never` is infinitely far away.
 * @throws Error as parseDuration.
 */
export function parseSafeDuration(text: string): number {
  return text === 'never' ? Number.POSITIVE_INFINITY : parseDuration(text);
}
