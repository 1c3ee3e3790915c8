/**
 * Where the upstream Kluctl examples are: $GANTRY_KLUCTL_EXAMPLES, else ../shared beside the clone, else the
 * workplace's shared folder (a CI clone may live anywhere on the machine). Read-only: copy before editing.
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
