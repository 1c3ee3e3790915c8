/**
 * The contract between the vars loader (../vars.ts) and the loader of each source kind: what a loader is given,
 * what it returns, and the parsing and templating every kind shares.
 */
import { parseYamlDocuments } from '../../yaml.ts';
import { renderStrings, type StringScope } from '../render-values.ts';
import type { ProjectEnvironment } from '../environment.ts';
import type { Values } from '../../values.ts';
import { messageOf } from '../../problems.ts';

export interface VarsScope {
  rootDir: string;
  /** Folders a relative vars file is looked up in, in order (kluctl's render search dirs). */
  searchDirs: readonly string[];
  /** The file that declares the sources, for error messages. */
  declaredIn: string;
  environment: ProjectEnvironment;
}

/** What one source is loaded with. */
export interface SourceRequest {
  /** The vars loaded before this source (each source sees them, as Kluctl's docs say). */
  context: Values;
  scope: VarsScope;
  /** `<file>: vars[<index>]`, the prefix of every error about this source. */
  label: string;
  ignoreMissing: boolean;
  /** The source holds a YAML multi-document stream, loaded as a list. */
  multidoc: boolean;
}

/**
 * What a source loaded: a mapping, or (with targetPath) any value; `sensitive` is the source kind's default,
 * which the source's own `sensitive` overrides.
 */
export interface LoadedVars {
  value: unknown;
  sensitive: boolean;
}

/**
 * Parses loaded text as YAML (JSON included): every document as a list with `multidoc`, else the first document
 * only (as Kluctl reads vars; an empty text is null).
 * @throws YamlError naming `source` and the line.
 */
export function parseVarsText(text: string, source: string, multidoc: boolean): unknown {
  const documents = parseYamlDocuments(text, source);
  return multidoc ? documents : (documents[0] ?? null);
}

/** Renders every string inside `value` as a template with the vars loaded so far (kluctl's RenderStruct). */
export function renderWithContext(value: unknown, request: SourceRequest, name: string): Promise<unknown> {
  const { scope, context } = request;
  const stringScope: StringScope = {
    rootDir: scope.rootDir,
    dir: scope.searchDirs[0] ?? scope.rootDir,
    name,
    context,
    signal: scope.environment.signal,
  };
  return renderStrings(value, stringScope, scope.environment.renderer);
}

/**
 * Why an HTTP request of a source (http, vault) got no answer: a timeout after `timeoutMs`, or the network error
 * undici reports as the cause (e.g. `connect ECONNREFUSED 127.0.0.1:1`).
 */
export function describeRequestFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
  return cause ?? messageOf(error);
}
