/**
 * The agent's Liquid templating on real files in a temp folder: bindings, output names, untouched plain files,
 * includes confined to the folder, and errors naming file, line and column.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  DEFAULT_LIQUID_LIMITS,
  LIQUID_RENDER_LIMIT_MS,
  renderLiquidTemplates,
  TemplateError,
  type LiquidLimits,
  type TemplateBindings,
} from './liquid-templates.ts';

const bindings: TemplateBindings = {
  configuration: { replicas: '3' },
  cluster: { id: 'c1', name: 'dev', handle: 'dev', tags: { tier: 'web' }, distro: null, version: '1.33.0' },
  contexts: { network: { vpc: 'vpc-123', subnets: ['a', 'b'] } },
  service: { id: 's1', name: 'web', namespace: 'web-ns' },
};

describe('renderLiquidTemplates', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-liquid-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const write = async (files: Record<string, string>) => {
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), text);
    }
  };
  const files = async () => (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;

  test('renders every binding, drops the suffix, and leaves plain files alone', async () => {
    const plain = 'value: "{{ not.liquid }}"\n';
    await write({
      'configmap.yaml.liquid': [
        'replicas: "{{ configuration.replicas }}"',
        'cluster: {{ cluster.name }}/{{ cluster.tags.tier }}/{{ cluster.version }}',
        'vpc: {{ contexts.network.vpc }}',
        'subnets: {{ contexts.network.subnets | join: "," }}',
        'namespace: {{ service.namespace }}',
        'optional: "{{ configuration.missing | default: "none" }}"',
        '',
      ].join('\n'),
      'nested/app.liquid': 'name: {{ service.name }}\n',
      'plain.yaml': plain,
    });

    expect(await renderLiquidTemplates(dir, bindings, { manifestNames: true })).toEqual(['configmap.yaml', 'nested/app.yaml']);
    expect(await readFile(path.join(dir, 'configmap.yaml'), 'utf8')).toBe(
      'replicas: "3"\ncluster: dev/web/1.33.0\nvpc: vpc-123\nsubnets: a,b\nnamespace: web-ns\noptional: "none"\n',
    );
    expect(await readFile(path.join(dir, 'nested/app.yaml'), 'utf8')).toBe('name: web\n');
    expect(await readFile(path.join(dir, 'plain.yaml'), 'utf8')).toBe(plain);
    expect(await files()).toBe(3);
  });

  test('keeps the name without the suffix when manifest names are not asked for (kustomize)', async () => {
    await write({ 'patch.liquid': 'x: {{ cluster.handle }}\n' });
    expect(await renderLiquidTemplates(dir, bindings, { manifestNames: false })).toEqual(['patch']);
  });

  test('verbatim (a service not templated): the text is kept as it is, {{ }} and bad syntax included', async () => {
    const text = 'rule: "{{ $labels.instance }} {% if %}"\n';
    await write({ 'alerts.yaml.liquid': text });
    expect(await renderLiquidTemplates(dir, bindings, { manifestNames: true, verbatim: true })).toEqual(['alerts.yaml']);
    expect(await readFile(path.join(dir, 'alerts.yaml'), 'utf8')).toBe(text);
    expect(await files()).toBe(1);
  });

  test('a template may include another one of the folder, never a file outside it', async () => {
    await write({ '_labels.liquid': 'tier: {{ cluster.tags.tier }}', 'a.yaml.liquid': 'labels: { {% include "_labels.liquid" %} }\n' });
    await renderLiquidTemplates(dir, bindings, { manifestNames: true });
    expect(await readFile(path.join(dir, 'a.yaml'), 'utf8')).toBe('labels: { tier: web }\n');

    await write({ 'b.yaml.liquid': '{% include "../../etc/hostname" %}\n' });
    await expect(renderLiquidTemplates(dir, bindings, { manifestNames: true })).rejects.toThrow(/b\.yaml\.liquid:1:1: .*Failed to lookup/);
  });

  test('a syntax error or an unknown filter names the file, line and column, and nothing is written', async () => {
    await write({ 'a.yaml.liquid': 'a: 1\n', 'bad/b.yaml.liquid': 'a: 1\nb: {% if cluster.name %}\n' });
    const error = await renderLiquidTemplates(dir, bindings, { manifestNames: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemplateError);
    expect(error).toMatchObject({ file: 'bad/b.yaml.liquid', line: 2, column: 4 });
    expect((error as Error).message).toBe('template bad/b.yaml.liquid:2:4: tag {% if cluster.name %} not closed');
    expect((await readdir(dir)).sort()).toEqual(['a.yaml.liquid', 'bad']);

    await rm(path.join(dir, 'bad'), { recursive: true });
    await write({ 'c.yaml.liquid': 'c: {{ cluster.name | no_such_filter }}\n' });
    await expect(renderLiquidTemplates(dir, bindings, { manifestNames: true })).rejects.toThrow(
      'template c.yaml.liquid:1:4: undefined filter: no_such_filter',
    );
  });
});

describe('renderLiquidTemplates limits', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-liquid-limits-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const render = async (text: string, limits?: Partial<LiquidLimits>) => {
    await writeFile(path.join(dir, 'loop.yaml.liquid'), text);
    const started = performance.now();
    const error = await renderLiquidTemplates(dir, bindings, { manifestNames: true, ...(limits ? { limits } : {}) }).catch(
      (e: unknown) => e,
    );
    return { error, ms: performance.now() - started };
  };

  test('a loop of a billion iterations stops at once, naming the file (the range is over the memory limit)', async () => {
    const { error, ms } = await render('{% for i in (1..1000000000) %}x{% endfor %}\n');
    expect(error).toBeInstanceOf(TemplateError);
    expect((error as Error).message).toBe('template loop.yaml.liquid:1:1: memory alloc limit exceeded');
    expect(ms).toBeLessThan(1_000);
    expect(await readdir(dir)).toEqual(['loop.yaml.liquid']);
  });

  test('loops within the memory limit stop at the render limit, naming the file', async () => {
    const nested = '{% for i in (1..3000) %}{% for j in (1..3000) %}{{ j }}{% endfor %}{% endfor %}\n';
    const { error, ms } = await render(nested, { renderMs: 200 });
    expect((error as Error).message).toMatch(/^template loop\.yaml\.liquid:1:\d+: template render limit exceeded$/);
    expect(ms).toBeLessThan(2_000);
    expect(DEFAULT_LIQUID_LIMITS.renderMs).toBe(LIQUID_RENDER_LIMIT_MS);
  });

  test('a template longer than the parse limit is refused, naming the file', async () => {
    const { error } = await render(`a: "${'x'.repeat(2_000)}"\n`, { parseChars: 1_000 });
    expect((error as Error).message).toMatch(/^template loop\.yaml\.liquid(:\d+:\d+)?: parse length limit exceeded$/);
  });
});
