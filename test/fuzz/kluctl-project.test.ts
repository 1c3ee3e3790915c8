/**
 * Fuzzing the `.kluctl.yaml` loader and target resolution (src/project/kluctl-project.ts, src/project/args.ts) as the
 * CLI and the controller run them: generated project files (Kluctl's keys with right, wrong and hostile values, or
 * noise), a target name picked from them or not, and `-a` arguments. Every case ends in a loaded target or an Error
 * naming the file (and the field, for a schema error), within a time limit, and leaves Object.prototype as it was.
 * Budgets and seed replay: support/fuzz.ts.
 */
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { testRenderer } from '../support/engine.ts';
import { fuzz, testTimeout, type Budget } from './support/fuzz.ts';
import { expectLoadedOrRefused, fileText, loadsSettled, kluctlDocuments, templatedString } from './support/project.ts';

const renderer = testRenderer({ workers: 2 });
afterAll(async () => {
  await loadsSettled();
  await renderer.close();
});

const BUDGET: Budget = { runs: 1000, ms: 6_000 };

const valid = kluctlDocuments(templatedString, false);
const wrong = kluctlDocuments(templatedString, true);

/** A .kluctl.yaml and a target name: one of its own targets' names most of the time. */
const project = fc.oneof(valid.kluctl, wrong.kluctl).chain((document) => {
  const targets = Array.isArray(document['targets']) ? (document['targets'] as unknown[]) : [];
  const names = targets.flatMap((entry) => (typeof entry === 'object' && entry !== null && 'name' in entry ? [String(entry.name)] : []));
  return fc.record({
    text: fileText(fc.constant(document)),
    targetName: fc.oneof(
      { arbitrary: names.length > 0 ? fc.constantFrom(...names) : fc.constant(undefined), weight: 8 },
      fc.constant(undefined),
      templatedString,
    ),
  });
});

describe('.kluctl.yaml', () => {
  it(
    'loads into a resolved target or an error naming the file',
    () =>
      fuzz(
        'kluctl-project',
        fc.asyncProperty(project, fc.oneof(valid.args, wrong.args), async ({ text, targetName }, args) => {
          const deployment = 'deployments:\n  - path: a\ncommonLabels:\n  target: "{{ target.name }}"\n';
          await expectLoadedOrRefused({ '.kluctl.yaml': text, 'deployment.yaml': deployment }, { targetName, args }, renderer);
        }),
        BUDGET,
      ),
    testTimeout(BUDGET),
  );
});
