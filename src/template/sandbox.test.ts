/**
 * A project's templates are untrusted input: they run in Jinja2's sandbox, within time, size and memory limits, and
 * read no file whose real path leaves the project (render_limits.py, rendering.py). Each escape below runs a command
 * or reads a file on a plain Jinja2 Environment, as Kluctl's.
 */
import { randomBytes } from 'node:crypto';
import { access, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JinjaPool } from './jinja-pool.ts';
import { testRenderer } from '../../test/support/engine.ts';
import { TemplateError } from './template-error.ts';

const marker = `GANTRY-LEAK-${randomBytes(6).toString('hex')}`;
const TIME_LIMIT_SECONDS = 2;

let pool: JinjaPool;
let top: string;
let root: string;
/** Created by a template's command, if one ever runs. */
let ranFile: string;

beforeAll(async () => {
  pool = testRenderer({ workers: 1, timeLimitSeconds: TIME_LIMIT_SECONDS });
  top = await mkdtemp(path.join(tmpdir(), 'gantry-sandbox-'));
  ranFile = path.join(top, 'ran');
  root = path.join(top, 'project');
  await mkdir(path.join(top, 'outside'), { recursive: true });
  await writeFile(path.join(top, 'outside', 'secret.txt'), marker);
  await mkdir(path.join(root, 'inside'), { recursive: true });
  await writeFile(path.join(root, 'inside', 'part.txt'), 'inside-part');
  await symlink('../outside', path.join(root, 'lib'));
  await symlink('../outside/secret.txt', path.join(root, 'secret-link.txt'));
  await symlink('inside', path.join(root, 'alias'));
  await writeFile(path.join(root, 'file.yml'), 'a: {{ 1 }}\n');
});

afterAll(async () => {
  await pool?.close();
  await rm(top, { recursive: true, force: true });
});

/** The TemplateError of rendering `source` as the file `name` in the project root. */
async function failure(source: string, name = 'escape.yml'): Promise<TemplateError> {
  const error = await pool.renderString({ rootDir: root, dir: '.', name, source, context: {} }).then(
    (text) => new Error(`rendered: ${text}`),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof TemplateError)) throw error as Error;
  return error;
}

const render = (source: string) => pool.renderString({ rootDir: root, dir: '.', name: 'ok.yml', source, context: {} });

describe('known escapes fail with an error naming the file, and run nothing', () => {
  const escapes: Record<string, string> = {
    'a default global’s __globals__': `{{ lipsum.__globals__.os.popen('touch ${'RAN'}').read() }}`,
    'a class’s __subclasses__ through __mro__': `{{ ''.__class__.__mro__[1].__subclasses__() }}`,
    'a method’s __globals__ through __init__': `{{ cycler.__init__.__globals__.os.popen('touch ${'RAN'}') }}`,
    'a Kluctl global’s __globals__': `{{ load_template.__globals__['sys'].modules['os'].system('touch ${'RAN'}') }}`,
    'a nested global’s function': `{{ images.get_image.__globals__ }}`,
    'attribute access in a format string': `{{ '{0.__class__.__mro__}'.format(1) }}`,
    'format_map with an attribute': `{{ '{x.__class__}'.format_map({'x': 1}) }}`,
    'the attr filter': `{{ (1|attr('__class__')).__mro__ }}`,
    'the template’s own module': `{{ self.__init__.__globals__ }}`,
    'the mro method of a class': `{{ ''.__class__.mro() }}`,
  };
  for (const [name, template] of Object.entries(escapes)) {
    it(`refuses ${name}`, async () => {
      const error = await failure(template.replaceAll('RAN', ranFile));
      expect(error.file).toBe('escape.yml');
      expect(error.line).toBe(1);
      expect(error.message).toMatch(/SecurityError|is undefined|unsafe/);
      await expect(access(ranFile)).rejects.toThrow();
    });
  }

  it("keeps Kluctl's filters, globals and in-place changes working", async () => {
    const text = await render(
      '{% set d = {"a": 1} %}{% set _ = d.update({"b": 2}) %}{% set l = [] %}{% set _ = l.append(3) %}' +
        '{{ d | to_json }} {{ l }} {{ "x" | sha256(8) }} {{ merge_dict({"a": {"b": 1}}, {"a": {"c": 2}}) }} {{ "{}-{}".format(1, 2) }}',
    );
    expect(text).toBe("{\"a\": 1, \"b\": 2} [3] 2d711642 {'a': {'b': 1, 'c': 2}} 1-2");
  });
});

describe('limits', () => {
  it('stops a template that loops ten billion times with a TimeLimitError at its line, and renders the next', async () => {
    const started = performance.now();
    const error = await failure('x\n{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}');
    const seconds = (performance.now() - started) / 1000;
    expect(error.message).toMatch(/TimeLimitError: rendering took longer than its limit of 2 s/);
    expect(error.file).toBe('escape.yml');
    expect(error.line).toBe(2);
    expect(seconds).toBeLessThan(TIME_LIMIT_SECONDS * 10);
    expect(await render('{{ 1 + 1 }}')).toBe('2');
  });

  it('stops a loop that catches every exception (the alarm comes back until the entry is over)', async () => {
    // _is_collection catches Exception around iter(): a first alarm there would be swallowed.
    const error = await failure(
      '{% for i in range(100000) %}{% for j in range(100000) %}{{ merge_dict({}, {}) and "" }}{% endfor %}{% endfor %}',
    );
    expect(error.message).toMatch(/TimeLimitError/);
  });

  it('refuses a range of a billion items', async () => {
    expect((await failure('{% for i in range(1000000000) %}{% endfor %}')).message).toMatch(/OverflowError: Range too big/);
  });

  it('refuses numbers and repetitions that one C call would spend minutes or gigabytes on', async () => {
    expect((await failure('{{ 10 ** 10000000000 }}')).message).toMatch(/SecurityError: the result of \*\* would have more than 65536 bits/);
    expect((await failure('{% set n = 10 ** 19000 %}{{ n * n * n * n }}')).message).toMatch(/SecurityError: the result of \*/);
    expect((await failure("{{ 'x' * 10000000000 }}")).message).toMatch(/SecurityError: the result of \* would have more than/);
    expect((await failure('{{ [0] * 10000000000 }}')).message).toMatch(/SecurityError/);
    expect(await render('{{ 2 ** 10 }} {{ "ab" * 3 }} {{ 3 * [1] }} {{ 1.5 * 2 }}')).toBe('1024 ababab [1, 1, 1] 3.0');
  });

  it('fails a template that grows past the memory cap with MemoryError, and renders the next', async () => {
    // With the default time limit: doubling a text up to 4 GiB takes a few seconds.
    const roomy = testRenderer({ workers: 1 });
    try {
      const source = '{% set ns = namespace(s="x" * 60000000) %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}';
      const error = await roomy.renderString({ rootDir: root, dir: '.', name: 'grows.yml', source, context: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TemplateError);
      expect((error as TemplateError).message).toMatch(/grows\.yml:1: MemoryError/);
      expect(await roomy.renderString({ rootDir: root, dir: '.', name: 'next.yml', source: '{{ "still" }}', context: {} })).toBe('still');
    } finally {
      await roomy.close();
    }
  });
});

describe('files through symlinks', () => {
  const leaks: Record<string, [string, RegExp]> = {
    'an include through a symlinked folder': [
      "{% include 'lib/secret.txt' %}",
      /'lib\/secret\.txt' leads outside the project through the symlink 'lib' -> '\.\.\/outside'/,
    ],
    'an include of a symlinked file': [
      "{% include 'secret-link.txt' %}",
      /'secret-link\.txt' leads outside the project through the symlink 'secret-link\.txt' -> '\.\.\/outside\/secret\.txt'/,
    ],
    load_template: ["{{ load_template('lib/secret.txt') }}", /'lib\/secret\.txt' leads outside the project/],
    load_base64: ["{{ load_base64('secret-link.txt') }}", /'secret-link\.txt' leads outside the project/],
    load_sha256: ["{{ load_sha256('lib/secret.txt') }}", /'lib\/secret\.txt' leads outside the project/],
    'an import': ["{% import 'lib/secret.txt' as s %}", /'lib\/secret\.txt' leads outside the project/],
  };
  for (const [name, [template, message]] of Object.entries(leaks)) {
    it(`refuses ${name}, naming the link`, async () => {
      const error = await failure(template);
      expect(error.message).toMatch(message);
      expect(JSON.stringify(error)).not.toContain(marker);
    });
  }

  it('refuses to render a project file that is a symlink to a file outside', async () => {
    const [rendered] = await pool.renderFiles({ rootDir: root, files: ['secret-link.txt'], context: {} });
    expect(rendered && 'error' in rendered && rendered.error.message).toMatch(/'secret-link\.txt' leads outside the project/);
    expect(JSON.stringify(rendered)).not.toContain(marker);
  });

  it('keeps symlinks that stay inside the project working', async () => {
    expect(await render("{% include 'alias/part.txt' %} {{ load_base64('alias/part.txt') }}")).toBe('inside-part aW5zaWRlLXBhcnQ=');
    const [rendered] = await pool.renderFiles({ rootDir: root, files: ['file.yml'], context: {} });
    expect(rendered).toEqual({ path: 'file.yml', text: 'a: 1' });
  });
});
