/**
 * Kluctl's filters and globals (docs/kluctl/templating/filters.md, functions.md) through the real worker. Expected
 * values are from those docs, or computed with plain Python (base64, hashlib, textwrap, json, PyYAML configured as
 * Kluctl's yaml_utils configures it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BEGIN, END, parseImagePlaceholders } from './image-placeholder.ts';
import type { JinjaPool } from './jinja-pool.ts';
import { testRenderer } from '../../test/support/engine.ts';
import { TemplateError } from './template-error.ts';
import { makeProject } from './test-support.ts';

const context = {
  target: { name: 'test' },
  args: { list: ['a', 'b'], deep: { var: 'value' } },
  images: [{ image: 'nginx', resultImage: 'nginx:1.27' }],
};

let pool: JinjaPool;
let project: { root: string; remove: () => Promise<void> };
const stderrLines: string[] = [];

beforeAll(async () => {
  pool = testRenderer({ workers: 2, onStderr: (line) => stderrLines.push(line) });
  project = await makeProject({
    'cfg.yaml': 'name: {{ target.name }}-{{ extra }}',
    'self.yaml': 'x: {{ load_sha256("self.yaml") }}',
    'sub/local.yaml': 'local {{ target.name }}',
    'bin.dat': new Uint8Array([0, 1, 2, 255]),
    'forty.dat': new Uint8Array(Array.from({ length: 40 }, (_, index) => index)),
  });
});

afterAll(async () => {
  await pool?.close();
  await project?.remove();
});

function render(source: string, dir = '.'): Promise<string> {
  return pool.renderString({ rootDir: project.root, dir, name: 'inline', source, context });
}

describe('filters', () => {
  it('b64encode and b64decode', async () => {
    expect(await render('{{ "test" | b64encode }}|{{ "dGVzdA==" | b64decode }}')).toBe('dGVzdA==|test');
  });

  it('from_yaml parses YAML and JSON, and a plain = as a string', async () => {
    expect(await render('{% set y = "a: 1\\nb: [x, y]" | from_yaml %}{{ y.b[1] }} {{ y }}')).toBe("y {'a': 1, 'b': ['x', 'y']}");
    expect(await render('{{ \'{"j": [1, null]}\' | from_yaml }}|{{ "a: =" | from_yaml }}')).toBe("{'j': [1, None]}|{'a': '='}");
  });

  it('to_yaml keeps key order, writes multi-line strings as | blocks and quotes numeric strings', async () => {
    const source = "{{ {'b': 1, 'a': 'x\\ny', 'n': '123', 'on': 'on', 'l': [1, {'z': true}]} | to_yaml }}";
    expect(await render(source)).toBe("b: 1\na: |-\n  x\n  y\nn: '123'\n'on': 'on'\nl:\n- 1\n- z: true\n");
  });

  it('to_json uses Python json.dumps separators', async () => {
    expect(await render('{{ {"a": [1, true, none]} | to_json }}')).toBe('{"a": [1, true, null]}');
  });

  it('render renders a string with the current variables, as filter and as global', async () => {
    expect(await render('{% set a = "{{ target.name }}-x" %}{{ render(a) }}|{{ a | render }}')).toBe('test-x|test-x');
  });

  it('sha256 with an optional digest length', async () => {
    const digest = 'a3635c09bda7293ae1f144a240f155cf151451f2420d11ac385d13cce4eb5fa2';
    expect(await render('{{ "some-string" | sha256 }}|{{ "some-string" | sha256(6) }}')).toBe(`${digest}|${digest.slice(0, 6)}`);
  });

  it('slugify as python-slugify does, with its keyword arguments', async () => {
    expect(await render('{{ "Hello World & Friends" | slugify }}|{{ "C\'est déjà l\'été" | slugify(separator="_") }}')).toBe(
      'hello-world-friends|c_est_deja_l_ete',
    );
  });
});

describe('globals', () => {
  it('load_template renders a file from the search path with the current variables and keyword arguments', async () => {
    expect(await render('{{ load_template("cfg.yaml", extra="e") }}|{{ load_template("local.yaml") }}', 'sub')).toBe(
      'name: test-e|local test',
    );
  });

  it('load_sha256 hashes the rendered file, with a placeholder for itself', async () => {
    const cfg = await render('{{ load_template("cfg.yaml", extra="e") | sha256 }}');
    expect(cfg).toHaveLength(64);
    // self.yaml renders load_sha256("self.yaml") inside the hashing as "__self_sha256__".
    const self = 'fa5e067167001317f2a3f848e96af2ca1e01153ab6756c9ba86edc499b07699a';
    const [rendered] = await pool.renderFiles({ rootDir: project.root, files: ['self.yaml'], context });
    expect(rendered).toEqual({ path: 'self.yaml', text: `x: ${self}` });
    expect(await render('{{ load_sha256("self.yaml", 8) }}')).toBe(self.slice(0, 8));
  });

  it('load_base64 encodes the bytes of a file, wrapped at the optional width', async () => {
    expect(await render('{{ load_base64("bin.dat") }}')).toBe('AAEC/w==');
    expect(await render('{{ load_base64("forty.dat", 16) }}')).toBe('AAECAwQFBgcICQoL\nDA0ODxAREhMUFRYX\nGBkaGxwdHh8gISIj\nJCUmJw==');
  });

  it('get_var follows a path or the first present of several paths, else the default', async () => {
    expect(
      await render("{{ get_var('args.deep.var', 'd') }}|{{ get_var(['nope.x', 'args.deep.var']) }}|{{ get_var('args.nope', 'd') }}"),
    ).toBe('value|value|d');
    expect(await render("{{ get_var('args.list[1]') }}|{{ get_var('nope') }}")).toBe('b|None');
  });

  it('merge_dict merges deeply into a copy; update_dict merges in place', async () => {
    expect(await render("{% set a = {'a': {'x': 1, 'y': 2}} %}{{ merge_dict(a, {'a': {'y': 3}, 'b': 4}) }} {{ a }}")).toBe(
      "{'a': {'x': 1, 'y': 3}, 'b': 4} {'a': {'x': 1, 'y': 2}}",
    );
    expect(await render("{% set d = {'a': 1} %}{{ update_dict(d, {'b': 2}) }}{{ d }}")).toBe("{'a': 1, 'b': 2}");
  });

  it('raise fails the rendering with the message', async () => {
    const error = await render('ok\n{{ raise("boom") }}').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TemplateError);
    expect(error).toMatchObject({ file: 'inline', line: 2, reason: 'TemplateError: boom' });
  });

  it('debug_print writes to stderr and prints nothing', async () => {
    expect(await render('[{{ debug_print("hello " ~ target.name) }}]')).toBe('[]');
    await expect.poll(() => stderrLines).toContain('debug_print: hello test');
  });

  it('time: parse_iso, deltas, members, comparison and time zones', async () => {
    expect(await render('{{ time.parse_iso("2022-10-01T10:00:00") + time.hour + time.minute * 2 }}')).toBe('2022-10-01T11:02:00');
    const members = '{{ t.weekday() }} {{ t.hour() }} {{ t.minute() }} {{ t.second() }} {{ t.nanosecond() }}';
    expect(await render(`{% set t = time.parse_iso("2022-10-01T10:20:30.5") %}${members}`)).toBe('5 10 20 30 500000000');
    const y2k = 'time.parse_iso("2000-01-01T00:00")';
    expect(await render(`{{ time.now() > ${y2k} }} {{ time.utcnow() < ${y2k} }}`)).toBe('True False');
    expect(await render('{{ time.parse_iso("2022-10-01T10:00:00+00:00").as_timezone("Europe/Berlin") }}')).toBe(
      '2022-10-01T12:00:00+02:00',
    );
  });

  it('images.get_image gives a placeholder for the image, over a variable named images', async () => {
    const rendered = await render('image: {{ images.get_image("nginx") }}');
    expect(rendered).toBe(`image: ${BEGIN}${Buffer.from('{"image": "nginx"}').toString('base64')}${END}`);
    expect(parseImagePlaceholders(rendered)).toEqual([{ image: 'nginx', start: 7, end: rendered.length }]);
  });
});
