/**
 * Where the shared fixtures are (the upstream Kluctl examples, Plural's seed example): ../shared beside the clone,
 * else the workplace's shared folder (a CI clone may live anywhere on the machine); $GANTRY_KLUCTL_EXAMPLES names
 * the examples elsewhere. Read-only: copy before editing.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export function findExamples(): string {
  const candidates = [
    process.env['GANTRY_KLUCTL_EXAMPLES'],
    path.resolve(REPO_ROOT, '../shared/fixtures/kluctl-examples'),
    '/work/shared/fixtures/kluctl-examples',
  ];
  const found = candidates.find((candidate) => candidate && existsSync(path.join(candidate, 'SOURCE.md')));
  if (!found) throw new Error(`kluctl-examples not found; set GANTRY_KLUCTL_EXAMPLES (looked in ${candidates.filter(Boolean).join(', ')})`);
  return found;
}

/** A file of the shared fixtures, e.g. `plural/pipeline-example.yaml`. @throws Error naming where it looked. */
export function sharedFixture(relative: string): string {
  const candidates = [path.resolve(REPO_ROOT, '../shared/fixtures', relative), path.join('/work/shared/fixtures', relative)];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`shared fixture ${relative} not found (looked in ${candidates.join(', ')})`);
  return found;
}
