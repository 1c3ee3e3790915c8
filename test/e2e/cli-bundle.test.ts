/**
 * The CLI bundle setup builds (scripts/bundle/): it renders a real project exactly as the sources do, and
 * bin/gantry.js takes it only while every file it was built from is unchanged.
 */
import { mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCliBundle } from '../../scripts/bundle/build.ts';
import { currentBundleEntry, MANIFEST_FILE } from '../../scripts/bundle/current.ts';
import { copyExample, REPO_ROOT, removeCopy } from '../support/fixtures.ts';

const NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
// Runs the `main` of the module ENTRY names, as bin/gantry.js runs the bundle's or the sources'.
const RUNNER = 'const { main } = await import(process.env.ENTRY); process.exitCode = await main(process.argv);';

describe('the CLI bundle', () => {
  let bundleDir: string;
  let project: string;

  beforeAll(async () => {
    // Inside the repository, as .bundle/ is: the packages left out of the bundle are found from there.
    bundleDir = await mkdtemp(path.join(REPO_ROOT, '.bundle-test-'));
    await buildCliBundle(bundleDir);
    project = await copyExample('microservices-demo/3-templating-and-multi-env');
  });
  afterAll(async () => {
    await rm(bundleDir, { recursive: true, force: true });
    await removeCopy(project);
  });

  async function render(entry: string): Promise<string> {
    const args = ['render', '-t', 'test', '--offline-kubernetes', '--project-dir', project];
    const env = { ENTRY: entry, PATH: `${process.env['PATH']}${path.delimiter}${path.join(REPO_ROOT, '.cluster/bin')}` };
    return (await execa(NODE, ['--input-type=module', '-e', RUNNER, 'gantry', ...args], { env })).stdout;
  }

  it('renders a project as the sources do, finding the Jinja2 worker beside the sources', async () => {
    const entry = currentBundleEntry(bundleDir);
    expect(entry).toBe(pathToFileURL(path.join(bundleDir, 'main.js')).href);
    const bundled = await render(entry as string);
    expect(bundled).toContain('kind: Deployment');
    expect(bundled).toBe(await render(pathToFileURL(path.join(REPO_ROOT, 'src/cli/main.ts')).href));
  });
});

describe('currentBundleEntry', () => {
  let dir: string;
  let input: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(REPO_ROOT, '.bundle-test-'));
    input = path.join(dir, 'input.ts');
    await writeFile(input, 'export {};\n');
    const inputs = { [path.relative(REPO_ROOT, input)]: (await stat(input)).mtimeMs };
    await writeFile(path.join(dir, MANIFEST_FILE), JSON.stringify({ entry: 'main.js', inputs }));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('names the entry while every input is as built, and nothing once one changes or goes', async () => {
    expect(currentBundleEntry(dir)).toBe(pathToFileURL(path.join(dir, 'main.js')).href);
    const later = new Date(Date.now() + 5_000);
    await utimes(input, later, later);
    expect(currentBundleEntry(dir)).toBeUndefined();
    await rm(input);
    expect(currentBundleEntry(dir)).toBeUndefined();
  });

  it('names nothing without a readable manifest', async () => {
    await writeFile(path.join(dir, MANIFEST_FILE), '{"entry":');
    expect(currentBundleEntry(dir)).toBeUndefined();
    expect(currentBundleEntry(path.join(dir, 'missing'))).toBeUndefined();
  });
});
