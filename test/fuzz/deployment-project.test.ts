/**
 * Fuzzing the deployment.yaml loader (src/project/deployment-project.ts with its vars sources) as the engine runs it:
 * a root deployment.yaml, an included `sub/deployment.yaml` (sometimes a library with `.kluctl-library.yaml`) and a
 * `vars.yaml`, each generated from Kluctl's keys with right, wrong and hostile values (paths out of the project,
 * template syntax, prototype keys), spliced with noise, or noise alone; then rendered with the real Jinja2 and
 * loaded. Every case ends in items inside the project or an Error naming the file (and the field, for a schema
 * error), within a time limit, and leaves Object.prototype as it was. Budgets and seed replay: support/fuzz.ts.
 */
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { testRenderer } from '../support/engine.ts';
import { fuzz, testTimeout, type Budget } from './support/fuzz.ts';
import { expectLoadedOrRefused, fileText, loadsSettled, hostileString, kluctlDocuments } from './support/project.ts';

const renderer = testRenderer({ workers: 2 });
afterAll(async () => {
  await loadsSettled();
  await renderer.close();
});

const BUDGET: Budget = { runs: 1000, ms: 8_000 };

// Template syntax comes in through the noise spliced into the text: in a value, where every string of the file
// would be one more chance of it, nearly every case would end at the first template error.
const valid = kluctlDocuments(hostileString, false);
const wrong = kluctlDocuments(hostileString, true);

const files = fc
  .record(
    {
      'deployment.yaml': fileText(fc.oneof(valid.deployment, wrong.deployment)),
      'sub/deployment.yaml': fileText(fc.oneof(valid.included, wrong.included)),
      'sub/.kluctl-library.yaml': fileText(fc.oneof(valid.library, wrong.library)),
      'vars.yaml': fileText(fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
    },
    { requiredKeys: ['deployment.yaml'] },
  )
  .map((record) => Object.fromEntries(Object.entries(record).filter((entry): entry is [string, string] => entry[1] !== undefined)));

describe('deployment.yaml', () => {
  it(
    'loads into deployment items or an error naming the file',
    () =>
      fuzz(
        'deployment-project',
        fc.asyncProperty(files, async (project) => {
          await expectLoadedOrRefused(project, { targetName: undefined, args: [] }, renderer);
        }),
        BUDGET,
      ),
    testTimeout(BUDGET),
  );
});
