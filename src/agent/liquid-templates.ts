/**
 * Liquid templates in a service's folder, rendered by the agent as Plural's deployment-operator does for raw and
 * kustomize services: every `*.liquid` file is rendered with `configuration`, `cluster`, `contexts` and `service`
 * bound, and written without the `.liquid` suffix (`configmap.yaml.liquid` → `configmap.yaml`), before the folder
 * is rendered as usual. Files without the suffix are left as they are.
 *
 * Strictness follows Plural's Go engine (osteele/liquid with default settings): a variable that is not bound renders
 * as nothing, so optional values can use `| default: …`; an unknown filter and bad syntax are errors. Includes and
 * renders (`{% include "x" %}`) may only read files of the folder itself.
 *
 * Templates are untrusted input: each file's parse and render runs under liquidjs's limits (LiquidLimits), so a
 * template that loops a billion times or builds a huge string fails, naming its file, instead of holding the agent.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Liquid, LiquidError } from 'liquidjs';
import type { AgentService } from '../api/agent.ts';
import { messageOf } from '../problems.ts';

const SUFFIX = '.liquid';
const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'];

/** What a service's templates see, as Plural binds it (lower-case field names only). */
export interface TemplateBindings {
  /** The service's configuration values (strings). */
  configuration: Record<string, string>;
  /** The agent's cluster: id, name, handle, tags, distro, and version (the Kubernetes version it last reported). */
  cluster: AgentService['cluster'];
  /** Each bound service context's configuration, by context name. */
  contexts: AgentService['contexts'];
  service: { id: string; name: string; namespace: string };
}

/** A template that cannot be rendered: the file (relative to the folder) and, when Liquid knows it, line and column. */
export class TemplateError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  readonly column: number | undefined;

  constructor(file: string, reason: string, line?: number, column?: number) {
    super(`template ${file}${line === undefined ? '' : `:${line}:${column ?? 1}`}: ${reason}`);
    this.name = 'TemplateError';
    this.file = file;
    this.line = line;
    this.column = column;
  }
}

/** liquidjs's DoS limits, each applying to one file's parse or render (its includes counted in). */
export interface LiquidLimits {
  /** Characters of template text parsed (liquidjs `parseLimit`). */
  parseChars: number;
  /** Milliseconds of rendering (liquidjs `renderLimit`, checked before each tag and output). */
  renderMs: number;
  /** Characters and elements a render allocates: ranges, and strings built by filters (liquidjs `memoryLimit`). */
  memoryUnits: number;
}

/** 1 M characters per template: far above any manifest template. */
export const LIQUID_PARSE_LIMIT_CHARS = 1_000_000;
/** 2 s per template. */
export const LIQUID_RENDER_LIMIT_MS = 2_000;
/** 10 M characters or elements per template (a `(1..1000000000)` range is refused before it loops). */
export const LIQUID_MEMORY_LIMIT_UNITS = 10_000_000;

export const DEFAULT_LIQUID_LIMITS: LiquidLimits = {
  parseChars: LIQUID_PARSE_LIMIT_CHARS,
  renderMs: LIQUID_RENDER_LIMIT_MS,
  memoryUnits: LIQUID_MEMORY_LIMIT_UNITS,
};

export interface RenderOptions {
  /**
   * Give a rendered file without a manifest extension (`app.liquid` → `app`) the `.yaml` one, as Plural's raw
   * renderer reads any `.liquid` file as manifests while the engine reads only YAML and JSON files.
   */
  manifestNames: boolean;
  /** Take each file's text as it is, unrendered (a service that is not `templated`, as Plural's flag turns Liquid off). */
  verbatim?: boolean;
  /** Tighter (or looser) limits than DEFAULT_LIQUID_LIMITS, for tests. */
  limits?: Partial<LiquidLimits>;
}

/** The bindings of an agent's service. */
export function templateBindings(service: AgentService): TemplateBindings {
  return {
    configuration: service.configuration,
    cluster: service.cluster,
    contexts: service.contexts,
    service: { id: service.id, name: service.name, namespace: service.namespace },
  };
}

/**
 * Renders every `*.liquid` file under `dir` in place: the rendered file is written beside it without the suffix and
 * the template removed. `dir` must be a copy (the agent's wrapper project), never the source cache.
 * @returns the rendered files' paths relative to `dir`, sorted.
 * @throws TemplateError naming the first file (in path order) that fails, with its line and column (a limit of
 *   LiquidLimits exceeded says `parse length`, `template render` or `memory alloc limit exceeded`); nothing is
 *   written then.
 */
export async function renderLiquidTemplates(dir: string, bindings: TemplateBindings, options: RenderOptions): Promise<string[]> {
  const templates = await liquidFiles(dir);
  if (templates.length === 0) return [];
  const limits = { ...DEFAULT_LIQUID_LIMITS, ...options.limits };
  const liquid = new Liquid({
    root: [dir],
    partials: [dir],
    layouts: [dir],
    extname: '',
    strictFilters: true,
    strictVariables: false,
    parseLimit: limits.parseChars,
    renderLimit: limits.renderMs,
    memoryLimit: limits.memoryUnits,
  });
  // All are rendered before any is replaced, so a template may include another one.
  const outputs = new Map<string, string>();
  for (const file of templates) {
    outputs.set(file, options.verbatim ? await readFile(path.join(dir, file), 'utf8') : await renderFile(liquid, dir, file, bindings));
  }
  for (const [file, text] of outputs) {
    await writeFile(path.join(dir, outputName(file, options)), text);
    await rm(path.join(dir, file));
  }
  return templates.map((file) => outputName(file, options)).sort();
}

async function renderFile(liquid: Liquid, dir: string, file: string, bindings: TemplateBindings): Promise<string> {
  const text = await readFile(path.join(dir, file), 'utf8');
  try {
    return await liquid.parseAndRender(text, bindings);
  } catch (error) {
    throw templateError(file, error);
  }
}

/** liquidjs appends ", line:L, col:C" to its messages and keeps the position on the token; both are reshaped here. */
function templateError(file: string, error: unknown): TemplateError {
  if (!(error instanceof LiquidError)) return new TemplateError(file, messageOf(error));
  const [line, column] = error.token?.getPosition() ?? [];
  const reason = error.message.replace(/, line:\d+, col:\d+$/, '');
  return new TemplateError(file, reason, line, column);
}

function outputName(file: string, options: RenderOptions): string {
  const stripped = file.slice(0, -SUFFIX.length);
  const hasManifestExtension = MANIFEST_EXTENSIONS.includes(path.extname(stripped).toLowerCase());
  return options.manifestNames && !hasManifestExtension ? `${stripped}.yaml` : stripped;
}

/** `*.liquid` files under `dir`, relative to it, in path order (so errors are reported deterministically). */
async function liquidFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.toLowerCase().endsWith(SUFFIX))
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}
