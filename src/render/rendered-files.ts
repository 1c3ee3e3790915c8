/**
 * The render folder as the phases after templating see it: the files templating produced, held in memory, over
 * what is on disk (files copied as they were, chart output). A templated file reaches the disk only when a program
 * reads the folder itself (helm, the kustomize binary): in a project of thousands of small files, creating each
 * file cost more than rendering it, and most items are built natively from memory.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseYamlDocuments } from '../yaml.ts';

/**
 * One render's view of its render folder, keyed by absolute path: `set` holds a templated file in memory, `fromDisk`
 * hands a file over to the disk, reads look in memory first, and `write` puts held files on disk before a program
 * reads the folder. One instance per render (render-project.ts makes it, a standalone kustomize build its own);
 * nothing to close, its memory goes with it.
 * Writes are started once per file and folder, so concurrent `write` calls over the same files are safe.
 */
export class RenderedFiles {
  /** Text of each templated file by absolute path, until its folder's copy on disk takes over (fromDisk). */
  private readonly texts = new Map<string, string>();
  /** Documents of a program's output as it was parsed already, for the first readDocuments of its file. */
  private readonly parsed = new Map<string, unknown[]>();
  /** The held files of each folder, and its subfolders that hold some: each item lists its own folder only. */
  private readonly tree = new Map<string, { files: Set<string>; folders: Set<string> }>();
  private readonly writes = new Map<string, Promise<void>>();
  private readonly folders = new Map<string, Promise<unknown>>();

  /** Holds `text` as the content of `file` (an absolute path), replacing what was held. */
  set(file: string, text: string): void {
    this.texts.set(file, text);
    this.parsed.delete(file);
    this.writes.delete(file);
    this.node(path.dirname(file)).files.add(file);
  }

  /**
   * From now on `file` is read from disk: a program wrote it there (a chart's output over a templated file).
   * @param documents the YAML documents written, handed to the first readDocuments instead of parsing them again.
   */
  fromDisk(file: string, documents?: unknown[]): void {
    this.texts.delete(file);
    this.tree.get(path.dirname(file))?.files.delete(file);
    if (documents) this.parsed.set(file, documents);
    else this.parsed.delete(file);
  }

  /**
   * The file's YAML documents; undefined when there is no such file.
   * @throws YamlError naming the file and line of invalid YAML.
   */
  async readDocuments(file: string): Promise<unknown[] | undefined> {
    const documents = this.parsed.get(file);
    // Handed over once: the caller may change them, and a later reader must get the file's own content.
    if (documents) {
      this.parsed.delete(file);
      return documents;
    }
    const text = await this.read(file);
    return text === undefined ? undefined : parseYamlDocuments(text, file);
  }

  /** The file's text, from memory or else from disk; undefined when it is neither there nor a regular file on disk. */
  async read(file: string): Promise<string | undefined> {
    const text = this.texts.get(file);
    if (text !== undefined) return text;
    return (await stat(file).catch(() => undefined))?.isFile() ? await readFile(file, 'utf8') : undefined;
  }

  /** `<dir>/<basename>.yml` or `.yaml`, whichever exists first (as findProjectFile), in memory or on disk. */
  async find(dir: string, basename: string): Promise<string | undefined> {
    for (const extension of ['.yml', '.yaml']) {
      const candidate = path.join(dir, basename + extension);
      if (this.texts.has(candidate) || (await stat(candidate).catch(() => undefined))?.isFile()) return candidate;
    }
    return undefined;
  }

  /** Files of `dir` (and with `recursive` of its subfolders), in memory or on disk, as sorted slash paths relative to it. */
  async list(dir: string, recursive: boolean): Promise<string[]> {
    const found = new Set(this.held(dir, recursive).map((file) => slashPath(path.relative(dir, file))));
    const entries = await readdir(dir, { withFileTypes: true, recursive }).catch(() => []);
    for (const entry of entries) {
      if (entry.isFile()) found.add(slashPath(path.relative(dir, path.join(entry.parentPath, entry.name))));
    }
    return [...found].sort();
  }

  /**
   * Writes the files held in memory under `dir` (all of them when undefined) to disk, each once; resolves when
   * every one of them is there, also those another call started writing.
   */
  async write(dir?: string): Promise<void> {
    const files = dir === undefined ? [...this.texts.keys()] : this.held(dir, true);
    await Promise.all(files.map((file) => this.writeOnce(file)));
  }

  /** The held files of `dir`, with `recursive` those of its subfolders too. */
  private held(dir: string, recursive: boolean): string[] {
    const node = this.tree.get(dir);
    if (!node) return [];
    return [...node.files, ...(recursive ? [...node.folders].flatMap((folder) => this.held(folder, true)) : [])];
  }

  /** The entry of `dir`, made with those of its parents up to the first that exists. */
  private node(dir: string): { files: Set<string>; folders: Set<string> } {
    let node = this.tree.get(dir);
    if (!node) {
      node = { files: new Set(), folders: new Set() };
      this.tree.set(dir, node);
      const parent = path.dirname(dir);
      if (parent !== dir) this.node(parent).folders.add(dir);
    }
    return node;
  }

  private writeOnce(file: string): Promise<void> {
    let writing = this.writes.get(file);
    if (!writing) {
      const text = this.texts.get(file) ?? '';
      writing = this.folder(path.dirname(file)).then(() => writeFile(file, text));
      this.writes.set(file, writing);
    }
    return writing;
  }

  /** One mkdir per folder, not per file: in a project of thousands of files, a recursive mkdir each cost more than writing them. */
  private folder(dir: string): Promise<unknown> {
    let making = this.folders.get(dir);
    if (!making) {
      making = mkdir(dir, { recursive: true });
      this.folders.set(dir, making);
    }
    return making;
  }
}

function slashPath(file: string): string {
  return file.split(path.sep).join('/');
}
