/**
 * Jinja2 semantics as Kluctl renders them, checked against the real Python worker. Expected values come from
 * Kluctl's templating docs or from running plain Python jinja2 3.1.6.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JinjaPool, RenderedFile } from './jinja-pool.ts';
import { testRenderer } from '../../test/support/engine.ts';
import { TemplateError } from './template-error.ts';
import { makeProject } from './test-support.ts';

const context = { target: { name: 'test', context: 'default' }, args: { flag: true, none: null, n: 1.5 } };

let pool: JinjaPool;
let project: { root: string; remove: () => Promise<void> };

beforeAll(async () => {
  pool = testRenderer({ workers: 2 });
  project = await makeProject({
    'shared.j2': 'root-shared',
    'lib/m.j2': 'm({% include "./n.j2" %})',
    'lib/n.j2': 'root-lib-n',
    'a/shared.j2': 'a-shared',
    'a/up.j2': 'a-up',
    'a/b/part.j2': 'b-part',
    'a/b/includes.yml': '{% include "shared.j2" %}|{% include "./part.j2" %}|{% include "../up.j2" %}|{% include "lib/m.j2" %}',
    'a/b/bad-include.yml': 'ok\n{% include "broken.j2" %}\n',
    'broken.j2': 'first\nsecond {{ nope }}\n',
    'a/b/missing-include.yml': 'x\n\n{% include "nope.j2" %}',
    'macros.j2': '{% macro greet(who) %}hello {{ who }} from {{ target.name }}{% endmacro %}',
    'imports.yml': '{% import "macros.j2" as m %}{% from "macros.j2" import greet %}{{ m.greet("a") }}; {{ greet("b") }}',
    'undefined.yml': 'line1\n  value: {{ missing }}\n',
    'syntax.yml': '{% if x %}\nfoo\n{{ a b }}\n{% endif %}',
    'newline.yml': 'a: {{ 1 }}\n',
    'plain.yml': 'a: 1\n',
    'crlf.yml': 'a: {{ 1 }}\r\nb\r\n',
    'isolation-1.yml': '{{ update_dict(args, {"x": 1}) }}{{ args.x }}',
    'isolation-2.yml': '{{ get_var("args.x", "unset") }}',
    'batch/counter.j2': '{% set calls = namespace(n=0) %}{% macro count() %}{% set calls.n = calls.n + 1 %}{{ calls.n }}{% endmacro %}',
    'batch/import.yml': '{% import "counter.j2" as c %}{% from "counter.j2" import count %}{{ c.count() }}{{ count() }}',
    'batch/change-globals.yml': '{% set _ = images.update({"x": 1}) %}{% set _ = time.update({"x": 1}) %}{{ images | list }}',
    'batch/read-globals.yml': '{{ images | list }}{{ time | list | length }}',
    'batch/include-self.yml':
      '{% if inner is defined %}inner{% else %}{% with inner = 1 %}{% include "./include-self.yml" %}{% endwith %}{% endif %}',
    'batch/include-other.yml': '{% include "./include-self.yml" %}',
    'batch/a/part.j2': 'a-part',
    'batch/a/file.yml': '{% include "part.j2" %}',
    'batch/b/part.j2': 'b-part',
    'batch/b/file.yml': '{% include "part.j2" %}',
    'batch/fails.j2': '{{ nope }}',
    'batch/include-fails-1.yml': '{% include "fails.j2" ignore missing %}',
    'batch/include-fails-2.yml': 'x\n{% include "fails.j2" %}',
  });
});

afterAll(async () => {
  await pool?.close();
  await project?.remove();
});

async function renderFile(path: string, searchDirs?: string[]): Promise<RenderedFile> {
  const [rendered] = await pool.renderFiles({ rootDir: project.root, files: [path], context, searchDirs });
  if (!rendered) throw new Error('no result');
  return rendered;
}

function render(source: string, dir = '.', extra: Record<string, unknown> = {}): Promise<string> {
  return pool.renderString({ rootDir: project.root, dir, name: 'inline', source, context: { ...context, ...extra } });
}

async function renderError(source: string): Promise<TemplateError> {
  const error = await render(source).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof TemplateError)) throw new Error(`expected a TemplateError, got ${String(error)}`);
  return error;
}

describe('values print as Python prints them', () => {
  it('prints dicts, lists, booleans, None and floats in Python syntax', async () => {
    expect(await render("{{ {'a': True} }}|{{ [1, 'x', None] }}|{{ 1.0 }}|{{ 7 / 2 }}|{{ 7 // 2 }}|{{ '%05d' % 42 }}")).toBe(
      "{'a': True}|[1, 'x', None]|1.0|3.5|3|00042",
    );
  });

  it('prints JSON context values as the Python values they become, mappings with sorted keys as Kluctl passes them', async () => {
    expect(await render('{{ args }}')).toBe("{'flag': True, 'n': 1.5, 'none': None}");
  });
});

describe('Jinja2 settings', () => {
  it('keeps a set inside a loop local to the loop, while a namespace carries values out', async () => {
    const source =
      '{% set x = 1 %}{% for i in [1,2] %}{% set x = i %}{% endfor %}{{ x }}|' +
      '{% set ns = namespace(x=0) %}{% for i in [1,2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}';
    expect(await render(source)).toBe('1|3');
  });

  it('has the loopcontrols extension', async () => {
    const source =
      '{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}';
    expect(await render(source)).toBe('023');
  });

  it('neither trims nor lstrips blocks, and drops one trailing newline', async () => {
    expect(await render('{% if true %}\nx\n{% endif %}\n  {% for i in [1] %}\n  y\n  {% endfor %}\nend\n')).toBe('\nx\n\n  \n  y\n  \nend');
    expect(await renderFile('newline.yml')).toEqual({ path: 'newline.yml', text: 'a: 1' });
  });

  it('returns a file without any { unchanged, as Kluctl skips rendering it', async () => {
    expect(await renderFile('plain.yml')).toEqual({ path: 'plain.yml', text: 'a: 1\n' });
  });

  it('reads templates in text mode, so CRLF line ends become LF', async () => {
    expect(await renderFile('crlf.yml')).toEqual({ path: 'crlf.yml', text: 'a: 1\nb' });
  });
});

describe('errors', () => {
  it('reports an undefined variable with file, line and the failing line', async () => {
    const rendered = await renderFile('undefined.yml');
    expect('error' in rendered && rendered.error).toMatchObject({
      file: 'undefined.yml',
      line: 2,
      reason: "UndefinedError: 'missing' is undefined",
      expression: 'value: {{ missing }}',
      message: "undefined.yml:2: UndefinedError: 'missing' is undefined\n    value: {{ missing }}",
    });
  });

  it('reports a missing attribute as StrictUndefined does', async () => {
    const error = await renderError('a: 1\nb: {{ target.nope }}');
    expect(error).toMatchObject({ file: 'inline', line: 2, reason: "UndefinedError: 'dict object' has no attribute 'nope'" });
  });

  it('reports syntax errors with their line', async () => {
    const rendered = await renderFile('syntax.yml');
    expect('error' in rendered && rendered.error).toMatchObject({
      file: 'syntax.yml',
      line: 3,
      reason: "TemplateSyntaxError: expected token 'end of print statement', got 'b'",
      expression: '{{ a b }}',
    });
  });

  it('names the included template and its line for an error inside it', async () => {
    const rendered = await renderFile('a/b/bad-include.yml');
    expect('error' in rendered && rendered.error).toMatchObject({
      file: 'broken.j2',
      line: 2,
      reason: "UndefinedError: 'nope' is undefined",
      expression: 'second {{ nope }}',
    });
  });

  it('reports a missing include at the include', async () => {
    const rendered = await renderFile('a/b/missing-include.yml');
    expect('error' in rendered && rendered.error).toMatchObject({
      file: 'a/b/missing-include.yml',
      line: 3,
      reason: 'template nope.j2 not found',
    });
  });

  it('reports Python exceptions with their type', async () => {
    expect(await renderError('{{ 1 / 0 }}')).toMatchObject({ line: 1, reason: 'ZeroDivisionError: division by zero' });
  });

  it('reports a file that does not exist without a line', async () => {
    const rendered = await renderFile('no/such.yml');
    expect('error' in rendered && rendered.error).toMatchObject({ file: 'no/such.yml', line: undefined });
  });
});

describe('includes and imports', () => {
  it('searches the own folder, then each parent up to the root; ./ and ../ are relative to the including file', async () => {
    // shared.j2: a/shared.j2 is nearer than the root one. lib/m.j2 includes ./n.j2, which as in Kluctl becomes
    // the search-path name lib/n.j2.
    expect(await renderFile('a/b/includes.yml')).toEqual({
      path: 'a/b/includes.yml',
      text: 'a-shared|b-part|a-up|m(root-lib-n)',
    });
  });

  it('uses explicit search dirs instead of the folder chain when given', async () => {
    const rendered = await renderFile('a/b/includes.yml', ['.']);
    expect(rendered).toEqual({ path: 'a/b/includes.yml', text: 'root-shared|b-part|a-up|m(root-lib-n)' });
  });

  it('gives macros of imported templates the variables, which Kluctl passes as globals', async () => {
    expect(await renderFile('imports.yml')).toEqual({ path: 'imports.yml', text: 'hello a from test; hello b from test' });
  });

  it('applies the search path of the folder given for a string template', async () => {
    expect(await render('{% include "part.j2" %}/{% include "shared.j2" %}', 'a/b')).toBe('b-part/a-shared');
  });
});

it('never lets a request see variables changed in place by an earlier request', async () => {
  const [changed] = await pool.renderFiles({ rootDir: project.root, files: ['isolation-1.yml'], context });
  const [later] = await pool.renderFiles({ rootDir: project.root, files: ['isolation-2.yml'], context });
  expect([changed, later]).toEqual([
    { path: 'isolation-1.yml', text: '1' },
    { path: 'isolation-2.yml', text: 'unset' },
  ]);
});

describe('the files of one request, which share an Environment', () => {
  // Up to four files are one worker request (JinjaPool's MIN_FILES_PER_REQUEST).
  async function renderRequest(files: string[], searchDirs?: string[]): Promise<RenderedFile[]> {
    return pool.renderFiles({ rootDir: project.root, files, context, searchDirs });
  }

  it('evaluates a template imported by several files again for each, as a new Environment would', async () => {
    const files = ['batch/import.yml', 'batch/import.yml', 'batch/import.yml'];
    expect(await renderRequest(files)).toEqual(files.map((path) => ({ path, text: '12' })));
  });

  it('gives each file new time and images globals, whatever an earlier file changed in them', async () => {
    expect(await renderRequest(['batch/change-globals.yml', 'batch/read-globals.yml'])).toEqual([
      { path: 'batch/change-globals.yml', text: "['get_image', 'x']" },
      { path: 'batch/read-globals.yml', text: "['get_image']6" },
    ]);
  });

  it('finds a file outside the search dirs by its own name only while rendering that file', async () => {
    const [self, other] = await renderRequest(['batch/include-self.yml', 'batch/include-other.yml'], ['lib']);
    expect(self).toEqual({ path: 'batch/include-self.yml', text: 'inner' });
    expect(other && 'error' in other && other.error.reason).toBe(`template ${project.root}/batch/include-self.yml not found`);
  });

  it("looks a name up on each file's own search path", async () => {
    expect(await renderRequest(['batch/a/file.yml', 'batch/b/file.yml', 'batch/a/file.yml'])).toEqual([
      { path: 'batch/a/file.yml', text: 'a-part' },
      { path: 'batch/b/file.yml', text: 'b-part' },
      { path: 'batch/a/file.yml', text: 'a-part' },
    ]);
  });

  it('locates an error inside a template an earlier file of the request loaded', async () => {
    const rendered = await renderRequest(['batch/include-fails-1.yml', 'batch/include-fails-2.yml']);
    for (const file of rendered) {
      expect('error' in file && file.error).toMatchObject({ file: 'batch/fails.j2', line: 1, expression: '{{ nope }}' });
    }
  });
});
