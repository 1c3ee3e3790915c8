/**
 * Step 1 of rendering an item: every file of the item's folder goes through Jinja2 into the render folder, at the
 * same path relative to the project root (so kustomize references between rendered folders keep working), as
 * kluctl's deployment item render does. Folders holding a Chart.yaml are copied untouched, never templated.
 */
import { cp, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DeploymentItem } from '../project/deployment-project.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';
import { relativeSlashPath } from '../project/files.ts';
import { ProblemList } from '../problems.ts';

/** The folder an item renders into: `<renderRoot>/<relDir>`, with `-<index>` for a reused folder. */
export function renderedItemDir(renderRoot: string, item: DeploymentItem): string {
  const base = path.join(renderRoot, item.relDir ?? '.');
  return item.index === 0 ? base : `${base}-${item.index}`;
}

/**
 * Renders the item's files into `renderedItemDir(renderRoot, item)`.
 * @throws the renderer's TemplateError (naming file and line) for the first file that fails.
 */
export async function templateItem(item: DeploymentItem, rootDir: string, renderRoot: string, renderer: JinjaPool): Promise<string> {
  if (!item.dir || !item.relDir) throw new Error('templateItem needs a path item');
  const target = renderedItemDir(renderRoot, item);
  const { templates, verbatim } = await listItemFiles(item.dir);
  const files = templates.map((file) => path.posix.join(item.relDir === '.' ? '' : (item.relDir as string), file));
  const searchDirs = item.searchDirs.map((dir) => relativeSlashPath(rootDir, dir));
  const rendered = await renderer.renderFiles({ rootDir, files, context: item.context, searchDirs });
  const errors = rendered.flatMap((file) => ('error' in file ? [file.error.message] : []));
  if (errors.length > 0) throw new ProblemList(errors);
  await Promise.all(
    rendered.map(async (file, index) => {
      const destination = path.join(target, templates[index] as string);
      await mkdir(path.dirname(destination), { recursive: true });
      await writeFile(destination, 'text' in file ? file.text : '');
    }),
  );
  await Promise.all(verbatim.map((folder) => cp(path.join(item.dir as string, folder), path.join(target, folder), { recursive: true })));
  await mkdir(target, { recursive: true });
  return target;
}

/** Files to template (relative, slash-separated) and chart folders to copy as they are. */
async function listItemFiles(dir: string): Promise<{ templates: string[]; verbatim: string[] }> {
  const templates: string[] = [];
  const verbatim: string[] = [];
  async function walk(relative: string): Promise<void> {
    const entries = await readdir(path.join(dir, relative), { withFileTypes: true });
    if (relative && entries.some((entry) => entry.isFile() && entry.name === 'Chart.yaml')) {
      verbatim.push(relative);
      return;
    }
    for (const entry of entries) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (entry.name !== '.git') await walk(child);
      } else if (entry.isFile()) {
        templates.push(child);
      }
    }
  }
  await walk('');
  return { templates: templates.sort(), verbatim };
}
