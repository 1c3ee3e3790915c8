/**
 * Step 1 of rendering an item: every file of the item's folder goes through Jinja2 into the render folder (held in
 * memory until a program needs it on disk: RenderedFiles), at the same path relative to the project root (so
 * kustomize references between rendered folders keep working), as kluctl's deployment item render does. Folders holding a Chart.yaml, and files a `.templateignore` excludes, are
 * copied untouched, never templated.
 *
 * The copy holds no symlink: a link to a file is rendered (or copied) with its content, and it, like every link in a
 * chart folder, must lead inside the source root (resolveInside, assertLinksInside), or it would bring the host's
 * files into the copy for kustomize to read. Links to folders are left out of the copy, as before.
 */
import { cp, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import ignore, { type Ignore } from 'ignore';
import path from 'node:path';
import type { DeploymentItem } from '../project/deployment-project.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';
import { assertLinksInside, isInside, PathEscapeError, relativeSlashPath, resolveInside } from '../files.ts';
import { ProblemList } from '../problems.ts';
import { decryptFileTextIfEncrypted, type SopsEnv } from '../sops/decrypt.ts';
import type { Tools } from '../tools.ts';
import type { RenderedFiles } from './rendered-files.ts';
import { sopsFormatOf } from '../sops/metadata.ts';

/**
 * The folder an item renders into: `<renderRoot>/<source>/<relDir>`, with `-<index>` for a reused folder. Each
 * source (the project, each git include) renders into its own tree, as its relative paths only mean something there.
 */
export function renderedItemDir(renderRoot: string, item: DeploymentItem): string {
  const base = path.join(renderedSourceRoot(renderRoot, item), item.relDir ?? '.');
  return item.index === 0 ? base : `${base}-${item.index}`;
}

/** The rendered copy of the item's source (the project, or a git or OCI source): `<renderRoot>/<source>`. */
export function renderedSourceRoot(renderRoot: string, item: DeploymentItem): string {
  return path.join(renderRoot, item.source.id || 'project');
}

/** The item's source as errors name it: `the project`, or `the source '<id>'` for a git or OCI source. */
export function sourceName(item: DeploymentItem): string {
  return item.source.id ? `the source '${item.source.id}'` : 'the project';
}

/** What templating an item needs besides the item. */
export interface TemplateEnvironment {
  renderer: JinjaPool;
  /** Runs sops. */
  tools: Tools;
  /** Extra environment for sops (keys), added to the engine's child environment. */
  sopsEnv?: SopsEnv | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Renders the item's files into `renderedItemDir(renderRoot, item)` as `files` holds them (in memory, see
 * RenderedFiles), copies the files not to template there on disk, then decrypts the sops-encrypted ones.
 * @returns the item's rendered folder.
 * @throws the renderer's TemplateError (naming file and line) for the first file that fails; ProblemList naming each
 *   file sops cannot decrypt; PathEscapeError naming a symlink of the folder that leads outside the source root.
 */
export async function templateItem(
  item: DeploymentItem,
  renderRoot: string,
  files: RenderedFiles,
  environment: TemplateEnvironment,
): Promise<string> {
  if (!item.dir || !item.relDir) throw new Error('templateItem needs a path item');
  const rootDir = item.source.root;
  const target = renderedItemDir(renderRoot, item);
  const { templates, verbatim } = await listItemFiles(item.dir, rootDir, sourceName(item));
  const rendered = await environment.renderer.renderFiles({
    rootDir,
    files: templates.map((file) => path.posix.join(item.relDir === '.' ? '' : (item.relDir as string), file)),
    context: item.context,
    searchDirs: item.searchDirs.map((dir) => relativeSlashPath(rootDir, dir)),
    signal: environment.signal,
  });
  const errors = rendered.flatMap((file) => ('error' in file ? [file.error.message] : []));
  if (errors.length > 0) throw new ProblemList(errors);
  rendered.forEach((file, index) => files.set(path.join(target, templates[index] as string), 'text' in file ? file.text : ''));
  await Promise.all(verbatim.map((entry) => copyVerbatim(item, entry, target)));
  await decryptSopsFiles(target, [...templates, ...verbatim], files, item.relDir, environment);
  return target;
}

/**
 * Copies a file or a chart folder as it is, with the content of its links (after checking that every link of a chart
 * folder leads inside the source root: fs.cp would otherwise copy a link as a link to its absolute target).
 * @throws PathEscapeError `<item folder>: local chart '<folder>': the symlink '<link>' -> '<target>' leads outside …`.
 */
async function copyVerbatim(item: DeploymentItem, entry: string, target: string): Promise<void> {
  const source = path.join(item.dir as string, entry);
  if ((await stat(source)).isDirectory()) {
    await assertLinksInside(source, sourceName(item), item.source.root)
      .then(async () => assertNoLinkLoop(source, source, ancestorsOf(await realpath(source))))
      .catch((error: Error) => {
        throw new PathEscapeError(`${item.relDir}: local chart '${entry}': ${error.message}`);
      });
  }
  await cp(source, path.join(target, entry), { recursive: true, dereference: true });
}

/** `/a/b/c` → `['/', '/a', '/a/b']`. */
function ancestorsOf(dir: string): string[] {
  const parent = path.dirname(dir);
  return parent === dir ? [] : [...ancestorsOf(parent), parent];
}

/**
 * Walks `dir` (below `root`) as a copy with the links' content does, following links to folders.
 * @param chain the real paths of the folders above `dir` on this walk, starting with those above `root`.
 * @throws PathEscapeError naming the first link that leads back to a folder on its own way (`up -> ..`, or two links
 *   leading into each other's folders): the copy would never end.
 */
async function assertNoLinkLoop(root: string, dir: string, chain: readonly string[]): Promise<void> {
  const here = [...chain, await realpath(dir)];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await assertNoLinkLoop(root, child, here);
    if (!entry.isSymbolicLink() || !(await stat(child)).isDirectory()) continue;
    if (here.includes(await realpath(child)))
      throw new PathEscapeError(
        `the symlink '${relativeSlashPath(root, child)}' -> '${await readlink(child)}' leads back into a folder holding it`,
      );
    await assertNoLinkLoop(root, child, here);
  }
}

/**
 * Decrypts every sops-encrypted YAML/JSON file among `names` (manifests and helm values, templated or not; chart
 * folders have no such extension), as kluctl's sops docs define, where `files` holds it: in memory, or on disk for
 * a file copied as it was. Reports every file that fails.
 */
async function decryptSopsFiles(
  dir: string,
  names: readonly string[],
  files: RenderedFiles,
  relDir: string,
  environment: TemplateEnvironment,
): Promise<void> {
  const results = await Promise.allSettled(
    names
      .filter((name) => sopsFormatOf(name))
      .map(async (name) => {
        const file = path.join(dir, name);
        const { text, decrypted } = await decryptFileTextIfEncrypted((await files.read(file)) ?? '', {
          file: path.posix.join(relDir, name),
          tools: environment.tools,
          env: environment.sopsEnv,
          signal: environment.signal,
        });
        if (decrypted) files.set(file, text);
      }),
  );
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [(result.reason as Error).message] : []));
  if (failures.length > 0) throw new ProblemList(failures);
}

/**
 * Files to template (relative, slash-separated) and paths to copy as they are: chart folders, and files a
 * `.templateignore` (gitignore syntax) excludes — one in the file's folder or any folder above it, up to the
 * source root, as kluctl's templating docs define it. A symlink counts as what it leads to (a folder is skipped).
 * @throws PathEscapeError naming a symlink that leads outside the source root, `rootName`.
 */
async function listItemFiles(dir: string, sourceRoot: string, rootName: string): Promise<{ templates: string[]; verbatim: string[] }> {
  const templates: string[] = [];
  const verbatim: string[] = [];
  const ignores = await ancestorIgnores(dir, sourceRoot);
  async function walk(relative: string): Promise<void> {
    const folder = path.join(dir, relative);
    const entries = await readdir(folder, { withFileTypes: true });
    if (relative && entries.some((entry) => entry.isFile() && entry.name === 'Chart.yaml')) {
      verbatim.push(relative);
      return;
    }
    const local = await readIgnore(folder);
    if (local) ignores.push(local);
    for (const entry of entries) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (entry.name !== '.git') await walk(child);
      } else if (entry.isFile() || (entry.isSymbolicLink() && (await isLinkToFile(path.join(dir, child), sourceRoot, rootName)))) {
        (isIgnored(path.join(dir, child), ignores) ? verbatim : templates).push(child);
      }
    }
    if (local) ignores.pop();
  }
  await walk('');
  return { templates: templates.sort(), verbatim };
}

/**
 * Whether the link leads to a file, which is then copied with its content (false: to a folder or nothing, which are
 * not copied; a chart folder's link is checked where helm reads it).
 * @throws PathEscapeError naming the link and where it points when it leads to a file outside the source root.
 */
async function isLinkToFile(link: string, sourceRoot: string, rootName: string): Promise<boolean> {
  if (!(await stat(link).catch(() => undefined))?.isFile()) return false;
  await resolveInside(sourceRoot, relativeSlashPath(sourceRoot, link), { root: rootName });
  return true;
}

interface FolderIgnore {
  folder: string;
  rules: Ignore;
}

async function ancestorIgnores(dir: string, sourceRoot: string): Promise<FolderIgnore[]> {
  const folders: string[] = [];
  for (let current = path.dirname(dir); isInside(sourceRoot, current) && current !== dir; current = path.dirname(current)) {
    folders.unshift(current);
    if (current === sourceRoot) break;
  }
  const found = await Promise.all(folders.map(readIgnore));
  return found.filter((entry): entry is FolderIgnore => entry !== undefined);
}

async function readIgnore(folder: string): Promise<FolderIgnore | undefined> {
  const text = await readFile(path.join(folder, '.templateignore'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : { folder, rules: ignore().add(text) };
}

function isIgnored(file: string, ignores: readonly FolderIgnore[]): boolean {
  return ignores.some(({ folder, rules }) => rules.ignores(path.relative(folder, file).split(path.sep).join('/')));
}
