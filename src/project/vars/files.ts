/**
 * The `file` and `git` vars sources, as kluctl's variable-sources and sops docs define them: the file is a template,
 * rendered with the vars loaded before it, then decrypted when it is sops-encrypted (which makes it sensitive), then
 * parsed as YAML.
 */
import path from 'node:path';
import { decryptIfEncrypted } from '../../sops/decrypt.ts';
import { sopsFormatOf } from '../../sops/metadata.ts';
import type { GitRef } from '../../source/git-cache.ts';
import { isFile, relativeSlashPath, resolveInside } from '../../files.ts';
import type { VarsSourceGit } from '../schema.ts';
import { isPlainObject } from '../../values.ts';
import { parseVarsText, type LoadedVars, type SourceRequest } from './source.ts';

/**
 * `file: <path>`: looked up on the render search dirs (the item's or project's folder, then its parents').
 * @returns undefined when the file is missing and ignoreMissing is set.
 * @throws Error naming the file for a missing file, a template error, a sops failure or invalid YAML.
 */
export async function loadFileSource(file: string, request: SourceRequest): Promise<LoadedVars | undefined> {
  const { scope } = request;
  const found = await findOnSearchDirs(file, scope.searchDirs);
  if (!found) {
    if (request.ignoreMissing) return undefined;
    const searched = scope.searchDirs.map((dir) => relativeSlashPath(scope.rootDir, dir)).join(', ');
    throw new Error(`${request.label}: vars file '${file}' not found (searched in ${searched})`);
  }
  const relative = relativeSlashPath(scope.rootDir, found);
  // Before the template engine reads it: a `../` name or a symlink must not reach a file outside the project.
  await resolveInside(scope.rootDir, relative, { label: `${request.label}: vars file`, root: 'the project' });
  const searchDirs = scope.searchDirs.map((dir) => relativeSlashPath(scope.rootDir, dir));
  return renderVarsFile({ rootDir: scope.rootDir, file: relative, searchDirs, name: relative }, request);
}

/**
 * `git: {url, ref, path}`: the file at `path` of the commit `ref` names (default branch without one), rendered with
 * the repository as its only search dir (as Kluctl does).
 * @returns undefined when the file is missing and ignoreMissing is set (a missing repository or ref is an error).
 * @throws Error naming the source for a bad ref, an unreachable repository, a missing file, and the file's errors.
 */
export async function loadGitSource(config: VarsSourceGit, request: SourceRequest): Promise<LoadedVars | undefined> {
  const ref = gitRef(config, request.label);
  const checkout = await request.scope.environment.git
    .checkout(config.url, ref, {}, request.scope.environment.signal)
    .catch((error: Error) => {
      throw new Error(`${request.label}: ${error.message}`);
    });
  request.scope.environment.inputs?.recordGitRead({ url: config.url, ref, commit: checkout.commit });
  const file = path.resolve(checkout.dir, config.path);
  await resolveInside(checkout.dir, config.path, { label: `${request.label}: git path`, root: 'the repository' });
  if (!(await isFile(file))) {
    if (request.ignoreMissing) return undefined;
    throw new Error(
      `${request.label}: file '${config.path}' not found in git repository ${config.url} at ${describeRef(ref)} (commit ${checkout.commit})`,
    );
  }
  const relative = relativeSlashPath(checkout.dir, file);
  return renderVarsFile({ rootDir: checkout.dir, file: relative, searchDirs: ['.'], name: `${relative} (git ${config.url})` }, request);
}

function gitRef(config: VarsSourceGit, label: string): GitRef {
  if (!config.ref) return {};
  checkOneRef(config.ref, `${label}: git ref`);
  return config.ref;
}

/**
 * Kluctl's GitRef, as the git and gitFiles sources take it: exactly one of branch, tag or commit.
 * @throws Error starting with `what` (e.g. `deployment.yaml: vars[0]: git ref`) otherwise.
 */
export function checkOneRef(ref: { branch?: string; tag?: string; commit?: string }, what: string): void {
  const set = (['branch', 'tag', 'commit'] as const).filter((field) => ref[field]);
  if (set.length !== 1)
    throw new Error(`${what} needs exactly one of 'branch', 'tag' or 'commit'${set.length > 1 ? ` (found ${set.join(', ')})` : ''}`);
}

function describeRef(ref: GitRef): string {
  return ref.branch ? `branch ${ref.branch}` : ref.tag ? `tag ${ref.tag}` : ref.commit ? `commit ${ref.commit}` : 'the default branch';
}

interface VarsFile {
  rootDir: string;
  /** Relative to rootDir, slash-separated. */
  file: string;
  /** Relative to rootDir. */
  searchDirs: readonly string[];
  /** Names the file in errors. */
  name: string;
}

async function renderVarsFile(vars: VarsFile, request: SourceRequest): Promise<LoadedVars> {
  const { renderer, sopsEnv, tools, signal } = request.scope.environment;
  const [rendered] = await renderer.renderFiles({
    rootDir: vars.rootDir,
    files: [vars.file],
    context: request.context,
    searchDirs: vars.searchDirs,
    signal,
  });
  if (!rendered || 'error' in rendered) throw rendered?.error ?? new Error(`${vars.name}: not rendered`);
  const format = sopsFormatOf(vars.file);
  const { text, decrypted } = format
    ? await decryptIfEncrypted(rendered.text, { file: vars.name, format, tools, env: sopsEnv, signal })
    : { text: rendered.text, decrypted: false };
  const value = parseVarsText(text, vars.name, request.multidoc) ?? {};
  if (!request.multidoc && !isPlainObject(value)) throw new Error(`${vars.name}: a vars file must hold a YAML mapping`);
  return { value, sensitive: decrypted };
}

async function findOnSearchDirs(file: string, searchDirs: readonly string[]): Promise<string | undefined> {
  if (path.isAbsolute(file)) return undefined;
  for (const dir of searchDirs) {
    const candidate = path.resolve(dir, file);
    if (await isFile(candidate)) return candidate;
  }
  return undefined;
}
