/**
 * The agent's Liquid templating on real files in a temp folder: bindings, output names, untouched plain files,
 * includes confined to the folder, and errors naming file, line and column.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { renderLiquidTemplates, TemplateError, type TemplateBindings } from './liquid-templates.ts';

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
