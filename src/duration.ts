/**
 * Go-style durations (`90s`, `10m`, `1h30m`, `500ms`), the form Kluctl's flags and KluctlDeployment fields take.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration into milliseconds.
 * @throws Error for anything else.
 */
export function parseDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text)
    throw new Error(`invalid duration '${text}' (examples: 30s, 10m, 1h30m)`);
  return parts.reduce((total, part) => total + Number(part[1]) * (UNIT_MS[part[2] as string] as number), 0);
}
