/**
 * Renders every string inside a plain value as a Jinja2 template, as kluctl's RenderStruct does for targets and
 * vars sources. Strings without a `{` cannot hold a template and skip the round trip to Python.
 */
import path from 'node:path';
import type { JinjaPool } from '../template/jinja-pool.ts';
import { isPlainObject, type Values } from '../values.ts';

/** Where a template string is rendered: variables, the project root, and the (absolute) folder it belongs to. */
export interface StringScope {
  rootDir: string;
  dir: string;
  name: string;
  context: Values;
  /** Abandons the rendering. */
  signal?: AbortSignal;
}

function toRequest(scope: StringScope, source: string) {
  const dir = path.relative(scope.rootDir, scope.dir) || '.';
  return { rootDir: scope.rootDir, dir, name: scope.name, context: scope.context, source, signal: scope.signal };
}

/**
 * Renders every string leaf of `value` (a plain value: objects, arrays, scalars) as a Jinja2 template in `scope`,
 * concurrently, and returns a copy of the same shape; other leaves and strings without `{` are kept as they are.
 * Rendering is one pass: a rendered string is not rendered again (resolveTarget repeats the call for that).
 * @throws as JinjaPool.renderString: TemplateError of the first template to fail; the signal's reason when it fires.
 */
export async function renderStrings(value: unknown, scope: StringScope, renderer: JinjaPool): Promise<unknown> {
  if (typeof value === 'string') {
    return value.includes('{') ? renderer.renderString(toRequest(scope, value)) : value;
  }
  if (Array.isArray(value)) return Promise.all(value.map((entry) => renderStrings(entry, scope, renderer)));
  if (isPlainObject(value)) {
    const entries = await Promise.all(
      Object.entries(value).map(async ([key, entry]) => [key, await renderStrings(entry, scope, renderer)] as const),
    );
    return Object.fromEntries(entries);
  }
  return value;
}

/**
 * Evaluates a Kluctl `when` expression (a Jinja2 expression) in `context`; an empty expression is true.
 * @throws the renderer's TemplateError when the expression is invalid or uses an undefined variable.
 */
export async function evaluateCondition(expression: string | undefined, scope: StringScope, renderer: JinjaPool): Promise<boolean> {
  if (expression === undefined || expression.trim() === '' || expression.trim() === 'true') return true;
  const source = `{% if ${expression} %}true{% else %}false{% endif %}`;
  return (await renderer.renderString(toRequest(scope, source))) === 'true';
}
