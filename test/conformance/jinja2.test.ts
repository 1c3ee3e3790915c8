/**
 * The Jinja2 conformance corpus (test/conformance/jinja2/*.yaml) rendered with Gantry's JinjaPool and compared byte
 * for byte with what Kluctl's own templating code produced for the same case (written by generate.py; see
 * README.md). Any difference fails, naming the case and showing both outputs.
 */
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testRenderer } from '../support/engine.ts';
import type { TemplateError } from '../../src/template/template-error.ts';
import { parseYaml } from '../../src/yaml.ts';

const CORPUS_DIR = fileURLToPath(new URL('./jinja2/', import.meta.url));
const DEFAULT_FILE = 'template.yml';
/** The file name Kluctl's renderer reports for a string template; Gantry is given it as the template's name. */
const STRING_TEMPLATE_NAME = '<template>';
const MINIMUM_CASES = 150;

interface Location {
  file?: string;
  line?: number;
  source?: string;
}

interface Case {
  name: string;
  mode?: 'string';
  searchDirs?: string[];
  files?: Record<string, string>;
  render?: string;
  template?: string;
  vars?: Record<string, unknown>;
  expected?: string;
  expectedPattern?: string;
  expectedError?: Location & { message: string };
  gantryLocation?: Location;
}

/** What Gantry produced for a case, in the corpus's terms. */
type Outcome = { text: string } | { error: Location & { message: string } };

async function loadCorpus(): Promise<Map<string, Case[]>> {
  const corpus = new Map<string, Case[]>();
  for (const fileName of (await readdir(CORPUS_DIR)).filter((name) => name.endsWith('.yaml')).sort()) {
    const cases = parseYaml(await readFile(join(CORPUS_DIR, fileName), 'utf8'), fileName);
    if (!Array.isArray(cases)) throw new Error(`${fileName}: expected a list of cases`);
    corpus.set(fileName, cases as Case[]);
  }
  return corpus;
}

const corpus = await loadCorpus();
const pool = testRenderer({ workers: 2 });
let scratch: string;

beforeAll(async () => {
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'gantry-conformance-')));
});

afterAll(async () => {
  await pool.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The case's file tree, as generate.py builds it: `files`, plus `template` written to `render`. */
function caseFiles(testCase: Case): Record<string, string> {
  const files = { ...testCase.files };
  if (testCase.template !== undefined && testCase.mode !== 'string') files[testCase.render ?? DEFAULT_FILE] = testCase.template;
  return files;
}

/** Paths in messages relative to the case root, as generate.py writes them. */
function normalizePaths(message: string, root: string): string {
  return message.replaceAll(root, '<root>').replaceAll(dirname(root), '<root>/..');
}

function errorOutcome(error: TemplateError, root: string): Outcome {
  const location: Location = { file: error.file, line: error.line, source: error.expression };
  return { error: { message: normalizePaths(error.reason, root), ...location } };
}

let caseCounter = 0;

async function renderCase(testCase: Case): Promise<Outcome> {
  // The case root is a folder `root` inside a fresh folder, as in generate.py, so that `..` of the root is private.
  const root = join(scratch, String(++caseCounter), 'root');
  for (const [path, content] of Object.entries(caseFiles(testCase))) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  await mkdir(root, { recursive: true });
  const scope = { rootDir: root, context: testCase.vars ?? {}, searchDirs: testCase.searchDirs };
  if (testCase.mode === 'string') {
    const templates = [{ name: STRING_TEMPLATE_NAME, source: testCase.template ?? '', dir: '.' }];
    const [rendered] = await pool.renderStrings({ ...scope, templates });
    if (!rendered) throw new Error('no result');
    return 'error' in rendered ? errorOutcome(rendered.error, root) : { text: rendered.text };
  }
  const [rendered] = await pool.renderFiles({ ...scope, files: [testCase.render ?? DEFAULT_FILE] });
  if (!rendered) throw new Error('no result');
  return 'error' in rendered ? errorOutcome(rendered.error, root) : { text: rendered.text };
}

/** Kluctl's outcome, with the location Gantry reports instead where the case documents a deliberate difference. */
function expectedOutcome(testCase: Case): Outcome {
  if (testCase.expected !== undefined) return { text: testCase.expected };
  const { message, file, line, source } = testCase.expectedError ?? { message: '' };
  const location = testCase.gantryLocation ?? { file, line, source };
  return { error: { message, file: location.file, line: location.line, source: location.source } };
}

function describeOutcome(outcome: Outcome): string {
  return 'text' in outcome ? JSON.stringify(outcome.text) : JSON.stringify(outcome.error, null, 2);
}

it(`holds at least ${MINIMUM_CASES} cases, each with one unique name and one expectation`, () => {
  const all = [...corpus.values()].flat();
  expect(all.length).toBeGreaterThanOrEqual(MINIMUM_CASES);
  for (const [fileName, cases] of corpus) {
    const names = cases.map((testCase) => testCase.name);
    expect(
      names.filter((name, index) => names.indexOf(name) !== index),
      `${fileName}: duplicate names`,
    ).toEqual([]);
    for (const testCase of cases) {
      const kinds = [testCase.expected, testCase.expectedPattern, testCase.expectedError].filter((kind) => kind !== undefined);
      expect(kinds, `${fileName}: ${testCase.name}: needs exactly one of expected, expectedPattern, expectedError`).toHaveLength(1);
    }
  }
});

for (const [fileName, cases] of corpus) {
  describe(fileName, () => {
    for (const testCase of cases) {
      it(testCase.name, async () => {
        const actual = await renderCase(testCase);
        if (testCase.expectedPattern !== undefined) {
          const pattern = new RegExp(`^(?:${testCase.expectedPattern})$`);
          const text = 'text' in actual ? actual.text : undefined;
          expect(text, `${fileName}: ${testCase.name}: got ${describeOutcome(actual)}`).toMatch(pattern);
          return;
        }
        const expected = expectedOutcome(testCase);
        const report = `${fileName}: ${testCase.name}\nexpected (Kluctl): ${describeOutcome(expected)}\nactual (Gantry): ${describeOutcome(actual)}`;
        expect(actual, report).toStrictEqual(expected);
      });
    }
  });
}
