/**
 * Every local path a kustomization names must stay inside the render's root. Kluctl runs kustomize with
 * `--load-restrictor LoadRestrictionsNone`, as items of a project legitimately refer to other folders of it
 * (`resources: [../common]`), and so does Gantry; but that lets a kustomization read any file of the host (a
 * `configMapGenerator` of `../../../../etc/passwd`). This check takes the restriction's place: before kustomize
 * builds, the kustomization and every local kustomization it reaches are walked, and each path they name is resolved
 * with symlinks (resolveInside) against the root.
 *
 * The fields are those of kustomize's kustomization reference (kubectl.docs.kubernetes.io/references/kustomize/
 * kustomization) that name files or folders. Remote references (`https://…`, `ssh://…`, `git@host:…`) are left alone;
 * `file://` clones a repository of the host, so its path is checked. A path that does not exist is left to kustomize's
 * own error.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { relativeSlashPath, resolveInside } from '../files.ts';
import { isPlainObject, type Values } from '../values.ts';
import { parseYaml } from '../yaml.ts';
import type { RenderedFiles } from './rendered-files.ts';

/** The folder no kustomization may name a path outside of, and its name in errors (e.g. `the project`). */
export interface KustomizeRoot {
  dir: string;
  name: string;
}

/** Fields listing files or kustomization folders (these may hold a kustomization to walk into). */
const FOLDER_LISTS = ['resources', 'bases', 'components', 'generators', 'transformers', 'validators'];
/** Fields listing files only. patchesStrategicMerge entries may also be inline YAML (a string with a newline). */
const FILE_LISTS = ['crds', 'configurations', 'patchesStrategicMerge'];
/** Lists of mappings whose `path` names a file. */
const PATH_ENTRIES = ['patchesJson6902', 'patches', 'replacements'];
const GENERATORS = ['configMapGenerator', 'secretGenerator'];

/** A local path a kustomization names, and where (`configMapGenerator[0].files[0]`). */
interface NamedPath {
  field: string;
  /** The path as written, without a generator's `key=` or a `file://` scheme. */
  name: string;
  /** Whether kustomize may build it as a kustomization folder. */
  folder: boolean;
}

/**
 * Checks the kustomization `kustomization` (read from `file` in `dir`, or generated for it) and every local
 * kustomization it reaches, reading them where `files` holds them (in memory or on disk).
 * @throws PathEscapeError (from resolveInside) `<file relative to the root>: <field>: '<path>' is outside <root>`, or
 *   `… leads outside <root> through the symlink '<link>' -> '<target>'`; YamlError naming a reached kustomization
 *   that is not YAML.
 */
export async function assertKustomizationInside(
  dir: string,
  kustomization: Values,
  file: string,
  root: KustomizeRoot,
  files: RenderedFiles,
): Promise<void> {
  // The rendered files may all be in memory still; resolveInside resolves the root on disk.
  await mkdir(root.dir, { recursive: true });
  const seen = new Set<string>();
  const pending = [{ dir, kustomization, file }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (seen.has(next.dir)) continue;
    seen.add(next.dir);
    const shownFile = relativeSlashPath(root.dir, next.file);
    for (const named of namedPaths(next.kustomization)) {
      const label = `${shownFile}: ${named.field}`;
      await resolveInside(root.dir, named.name, { base: next.dir, label, root: root.name });
      if (!named.folder) continue;
      const folder = path.resolve(next.dir, named.name);
      const found = (await files.find(folder, 'kustomization')) ?? (await files.find(folder, 'Kustomization'));
      if (found && !seen.has(folder)) {
        const value = parseYaml((await files.read(found)) ?? '', found);
        if (isPlainObject(value)) pending.push({ dir: folder, kustomization: value, file: found });
      }
    }
  }
}

/** The local paths `kustomization` names, in the order of its fields. */
export function namedPaths(kustomization: Values): NamedPath[] {
  const found: NamedPath[] = [];
  const add = (field: string, value: unknown, folder = false, keyed = false): void => {
    if (typeof value !== 'string' || value.includes('\n')) return;
    const unkeyed = keyed && value.includes('=') ? value.slice(value.indexOf('=') + 1) : value;
    const name = localName(unkeyed);
    if (name !== undefined) found.push({ field, name, folder });
  };
  const list = (field: string, value: unknown, each: (entry: unknown, at: string) => void): void => {
    if (Array.isArray(value)) value.forEach((entry, index) => each(entry, `${field}[${index}]`));
  };
  const object = (value: unknown): Values => (isPlainObject(value) ? value : {});

  for (const field of FOLDER_LISTS) list(field, kustomization[field], (entry, at) => add(at, entry, true));
  for (const field of FILE_LISTS) list(field, kustomization[field], (entry, at) => add(at, entry));
  for (const field of PATH_ENTRIES) list(field, kustomization[field], (entry, at) => add(`${at}.path`, object(entry)['path']));
  for (const field of GENERATORS) {
    list(field, kustomization[field], (entry, at) => {
      const generator = object(entry);
      list(`${at}.files`, generator['files'], (source, sourceAt) => add(sourceAt, source, false, true));
      list(`${at}.envs`, generator['envs'], (source, sourceAt) => add(sourceAt, source));
      add(`${at}.env`, generator['env']);
    });
  }
  add('openapi.path', object(kustomization['openapi'])['path']);
  const helmGlobals = object(kustomization['helmGlobals']);
  add('helmGlobals.chartHome', helmGlobals['chartHome']);
  add('helmGlobals.configHome', helmGlobals['configHome']);
  list('helmCharts', kustomization['helmCharts'], (entry, at) => {
    const chart = object(entry);
    add(`${at}.valuesFile`, chart['valuesFile']);
    list(`${at}.additionalValuesFiles`, chart['additionalValuesFiles'], (values, valuesAt) => add(valuesAt, values));
  });
  list('helmChartInflationGenerator', kustomization['helmChartInflationGenerator'], (entry, at) => {
    const chart = object(entry);
    add(`${at}.chartHome`, chart['chartHome']);
    add(`${at}.values`, chart['values']);
  });
  return found;
}

/** The local path `reference` names, or undefined for a remote one (a URL other than `file://`, or `git@host:…`). */
function localName(reference: string): string | undefined {
  if (/^file:\/\//i.test(reference)) return reference.slice('file://'.length).replace(/(\/\/|\?).*$/, '');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(reference) || reference.startsWith('git@')) return undefined;
  return reference;
}
