/** Renders a real Kluctl example project (read-only fixture) with the variables its targets give it. */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseYamlDocuments } from '../yaml.ts';
import type { JinjaPool } from './jinja-pool.ts';
import { testRenderer } from '../../test/support/engine.ts';
import { example } from '../../test/support/fixtures.ts';

const ROOT = example('microservices-demo/3-templating-and-multi-env');

let pool: JinjaPool;

beforeAll(() => {
  pool = testRenderer();
});

afterAll(async () => {
  await pool?.close();
});

/** Every file of the project except the vendored Helm charts, which Kluctl never renders. */
async function projectFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === '.helm-charts') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await projectFiles(path)));
    else files.push(relative(ROOT, path));
  }
  return files.sort();
}

async function contextFor(target: string, envType: string): Promise<Record<string, unknown>> {
  const [vars] = parseYamlDocuments(await readFile(join(ROOT, 'vars', `${envType}.yml`), 'utf8'), `vars/${envType}.yml`);
  return { target: { name: target, context: 'default' }, args: { env_type: envType }, ...(vars as Record<string, unknown>) };
}

it('renders every file of 3-templating-and-multi-env without error, for both env types', async () => {
  const files = await projectFiles(ROOT);
  expect(files.length).toBeGreaterThan(40);
  for (const [target, envType] of [
    ['test', 'real'],
    ['local', 'local'],
  ] as const) {
    const rendered = await pool.renderFiles({ rootDir: ROOT, files, context: await contextFor(target, envType) });
    expect(rendered.filter((file) => 'error' in file)).toEqual([]);
    const text = (path: string): string => {
      const file = rendered.find((entry) => entry.path === path);
      return file && 'text' in file ? file.text : '';
    };
    expect(text('namespaces/namespace.yml')).toBe(`apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ms-demo-${target}`);
    expect(text('services/deployment.yml').includes('- path: loadgenerator')).toBe(envType === 'real');
    expect(text('third-party/redis/helm-values.yml').includes('sentinel:')).toBe(envType === 'real');
    expect(text('services/cartservice/deployment.yml')).toContain(`value: "cart-redis${envType === 'real' ? '' : '-master'}:6379"`);
  }
});
