/**
 * The `gitFiles` vars source, as kluctl's templating/variable-sources docs define it: the files matching globs in
 * every branch or tag of a repository whose name matches a regular expression (or in the ref or default branch
 * named), each optionally rendered with the vars loaded so far, decrypted when sops-encrypted (which makes the source
 * sensitive) and parsed as YAML. The value is a list with one entry per ref:
 *
 *   { ref: {branch|tag}, refStr: refs/heads/…, files: [file…], filesByPath: {path: file}, filesTree: {dir: {…: file}} }
 *   file = { file: <the files entry that matched>, path, size (bytes on disk; decrypted), content, parsed? }
 *
 * Refs come in name order and files in the order of a directory walk (names sorted per folder), as Kluctl's
 * filepath.Walk visits them; a file takes the first files entry whose glob matches (`*` stays within a folder, `**`
 * crosses folders). Kluctl requires a targetPath, since the value is a list.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { decryptIfEncrypted } from '../../sops/decrypt.ts';
import { sopsFormatOf } from '../../sops/metadata.ts';
import type { RemoteRefs } from '../../source/git-cache.ts';
import { renderStrings } from '../render-values.ts';
import type { VarsSourceGitFiles } from '../schema.ts';
import { checkOneRef } from './files.ts';
import { parseVarsText, type LoadedVars, type SourceRequest } from './source.ts';

type FileFilter = NonNullable<VarsSourceGitFiles['files']>[number];

interface MatchedRef {
  ref: { branch: string } | { tag: string };
  refStr: string;
  commit: string;
}

interface MatchedFile {
  file: FileFilter;
  path: string;
  size: number;
  content: string;
  parsed?: unknown;
}

/**
 * Loads the files of every matching ref.
 * @returns undefined when no ref matches and ignoreMissing is set; else a list (empty when no ref matches).
 * @throws Error naming the source for an unreachable repository, an invalid ref pattern, a commit no branch or tag
 *   points to, and a file that fails to render, decrypt or parse (naming the file and the ref).
 */
export async function loadGitFilesSource(config: VarsSourceGitFiles, request: SourceRequest): Promise<LoadedVars | undefined> {
  const { git, signal } = request.scope.environment;
  const remote = await git.refs(config.url, {}, signal).catch((error: Error) => {
    throw new Error(`${request.label}: ${error.message}`);
  });
  const refs = matchingRefs(config, remote, request.label);
  if (refs.length === 0 && request.ignoreMissing) return undefined;
  let sensitive = false;
  const value = [];
  for (const ref of refs) {
    const checkout = await git.checkout(config.url, { commit: ref.commit }, {}, signal);
    const files: MatchedFile[] = [];
    for (const relative of await walk(checkout.dir)) {
      const filter = (config.files ?? []).find((entry) => path.posix.matchesGlob(relative, entry.glob));
      if (!filter) continue;
      const where = `${relative} (gitFiles ${config.url} ${ref.refStr})`;
      const loaded = await loadFile(path.join(checkout.dir, relative), relative, filter, where, request);
      sensitive ||= loaded.decrypted;
      files.push(loaded.file);
    }
    value.push({ ref: ref.ref, refStr: ref.refStr, files, filesByPath: byPath(files), filesTree: tree(files) });
  }
  return { value, sensitive };
}

/** Kluctl's filterGitRefs: the default branch, the ref a commit is the tip of, or the refs a branch/tag regex matches. */
function matchingRefs(config: VarsSourceGitFiles, remote: RemoteRefs, label: string): MatchedRef[] {
  const ref = config.ref;
  if (!ref) {
    const name = `refs/heads/${remote.defaultBranch ?? ''}`;
    const found = remote.refs.find((candidate) => candidate.name === name);
    if (!found) throw new Error(`${label}: default branch of ${config.url} not found`);
    return [matched(found)];
  }
  checkOneRef(ref, `${label}: gitFiles ref`);
  if (ref.commit) {
    const found = remote.refs.find((candidate) => candidate.commit === ref.commit);
    if (!found) throw new Error(`${label}: commit ${ref.commit} is not the tip of a branch or tag of ${config.url}`);
    return [matched(found)];
  }
  const [prefix, pattern] = ref.branch ? ['refs/heads/', ref.branch] : ['refs/tags/', ref.tag ?? ''];
  let regex: RegExp;
  try {
    regex = new RegExp(`^${prefix}${pattern}$`);
  } catch (error) {
    throw new Error(`${label}: invalid ${ref.branch ? 'branch' : 'tag'} regex '${pattern}': ${(error as Error).message}`);
  }
  return remote.refs.filter((candidate) => regex.test(candidate.name)).map(matched);
}

function matched({ name, commit }: { name: string; commit: string }): MatchedRef {
  const ref = name.startsWith('refs/tags/') ? { tag: name.slice('refs/tags/'.length) } : { branch: name.slice('refs/heads/'.length) };
  return { ref, refStr: name, commit };
}

/** Every file below `root` (slash-separated, relative), folders walked in name order as Go's filepath.Walk does. */
async function walk(root: string, prefix = ''): Promise<string[]> {
  const entries = (await readdir(path.join(root, prefix), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  const files: string[] = [];
  for (const entry of entries) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await walk(root, relative)));
    else if (entry.isFile()) files.push(relative);
  }
  return files;
}

/** Renders (render: true), then decrypts (sops), then parses (parseYaml) one file, as Kluctl's loadGitFiles orders it. */
async function loadFile(
  absolute: string,
  relative: string,
  filter: FileFilter,
  where: string,
  request: SourceRequest,
): Promise<{ file: MatchedFile; decrypted: boolean }> {
  const { renderer, sopsEnv, tools, signal } = request.scope.environment;
  const raw = await readFile(absolute);
  let content = raw.toString('utf8');
  if (filter.render) {
    const scope = { rootDir: request.scope.rootDir, dir: request.scope.rootDir, name: where, context: request.context, signal };
    content = (await renderStrings(content, scope, renderer)) as string;
  }
  const format = sopsFormatOf(relative);
  const { text, decrypted } = format
    ? await decryptIfEncrypted(content, { file: where, format, tools, env: sopsEnv, signal })
    : { text: content, decrypted: false };
  // Kluctl reports the size on disk, or the decrypted content's for an encrypted file.
  const size = decrypted ? Buffer.byteLength(text) : raw.length;
  const file: MatchedFile = { file: filter, path: relative, size, content: text };
  if (filter.parseYaml) file.parsed = parseVarsText(text, where, filter.yamlMultiDoc ?? false);
  return { file, decrypted };
}

function byPath(files: readonly MatchedFile[]): Record<string, MatchedFile> {
  return Object.fromEntries(files.map((file) => [file.path, file]));
}

/** The files nested by folder: `a/b/c.yaml` at tree.a.b['c.yaml']. */
function tree(files: readonly MatchedFile[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const file of files) {
    const parts = file.path.split('/');
    const name = parts.pop() as string;
    let node = root;
    for (const part of parts) node = (node[part] ??= {}) as Record<string, unknown>;
    node[name] = file;
  }
  return root;
}
