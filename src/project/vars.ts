/**
 * Vars sources, as kluctl's templating/variable-sources docs define them: each source is rendered with the vars
 * loaded before it, then merged into the templating context (or under it, with noOverride), optionally at a
 * targetPath. This version loads `values` and `file`; other sources are refused with a clear error.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseYaml } from '../yaml.ts';
import { SUPPORTED_VARS_SOURCES, type VarsSource } from './schema.ts';
import { evaluateCondition, renderStrings } from './render-values.ts';
import type { ProjectEnvironment } from './environment.ts';
import { deepMerge, isPlainObject, setPath, type Values } from './values.ts';
import { isFile, relativeSlashPath } from './files.ts';

export interface VarsScope {
  rootDir: string;
  /** Folders a relative vars file is looked up in, in order (kluctl's render search dirs). */
  searchDirs: readonly string[];
  /** The file that declares the sources, for error messages. */
  declaredIn: string;
  environment: ProjectEnvironment;
}

/**
 * Loads `sources` in order into a copy of `context` and returns the new context.
 * @throws Error naming the declaring file and the source for a missing file, invalid YAML or a template error.
 */
export async function loadVars(sources: readonly VarsSource[] | undefined, context: Values, scope: VarsScope): Promise<Values> {
  let result = context;
  for (const [index, source] of (sources ?? []).entries()) {
    result = await loadSource(source, result, scope, `${scope.declaredIn}: vars[${index}]`);
  }
  return result;
}

async function loadSource(raw: VarsSource, context: Values, scope: VarsScope, label: string): Promise<Values> {
  const stringScope = { rootDir: scope.rootDir, dir: scope.searchDirs[0] ?? scope.rootDir, name: scope.declaredIn, context };
  const source = (await renderStrings(raw, stringScope, scope.environment.renderer)) as VarsSource;
  if (!(await evaluateCondition(source.when, stringScope, scope.environment.renderer))) return context;
  const loaded = await loadValue(source, context, scope, label);
  if (loaded === undefined) return context;
  const newVars = placeAtTargetPath(loaded, source.targetPath, label);
  return source.noOverride ? deepMerge(newVars, context) : deepMerge(context, newVars);
}

async function loadValue(source: VarsSource, context: Values, scope: VarsScope, label: string): Promise<unknown> {
  if (source.values !== undefined) return source.values;
  if (source.file !== undefined) return loadFile(source.file, source.ignoreMissing ?? false, context, scope, label);
  const kind = Object.keys(source).find((key) => !['ignoreMissing', 'noOverride', 'sensitive', 'targetPath', 'when', 'multidoc'].includes(key));
  if (kind && !(SUPPORTED_VARS_SOURCES as readonly string[]).includes(kind)) {
    throw new Error(`${label}: vars source '${kind}' is not supported by this version of Gantry (supported: ${SUPPORTED_VARS_SOURCES.join(', ')})`);
  }
  throw new Error(`${label}: a vars source needs one of ${SUPPORTED_VARS_SOURCES.join(', ')}`);
}

/** Vars files are templates too: found on the search dirs, rendered with the current vars, then parsed. */
async function loadFile(file: string, ignoreMissing: boolean, context: Values, scope: VarsScope, label: string): Promise<Values | undefined> {
  const found = await findOnSearchDirs(file, scope.searchDirs);
  if (!found) {
    if (ignoreMissing) return undefined;
    const searched = scope.searchDirs.map((dir) => relativeSlashPath(scope.rootDir, dir)).join(', ');
    throw new Error(`${label}: vars file '${file}' not found (searched in ${searched})`);
  }
  const relative = relativeSlashPath(scope.rootDir, found);
  const searchDirs = scope.searchDirs.map((dir) => relativeSlashPath(scope.rootDir, dir));
  const [rendered] = await scope.environment.renderer.renderFiles({ rootDir: scope.rootDir, files: [relative], context, searchDirs });
  if (!rendered || 'error' in rendered) throw rendered?.error ?? new Error(`${found}: not rendered`);
  const value = parseYaml(rendered.text, found) ?? {};
  if (!isPlainObject(value)) throw new Error(`${found}: a vars file must hold a YAML mapping`);
  return value;
}

async function findOnSearchDirs(file: string, searchDirs: readonly string[]): Promise<string | undefined> {
  if (path.isAbsolute(file)) return undefined;
  for (const dir of searchDirs) {
    const candidate = path.resolve(dir, file);
    if (await isFile(candidate)) return candidate;
  }
  return undefined;
}

function placeAtTargetPath(value: unknown, targetPath: string | undefined, label: string): Values {
  if (targetPath === undefined) {
    if (!isPlainObject(value)) throw new Error(`${label}: 'targetPath' is required for a vars source that is not a mapping`);
    return value;
  }
  const placed: Values = {};
  setPath(placed, targetPath, value);
  return placed;
}
