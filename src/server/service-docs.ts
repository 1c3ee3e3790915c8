/**
 * A service's docs (Plural's docsPath): the Markdown files below `docsPath` in its current revision's source, read
 * from that revision's tarball (the service's folder at its commit, as its agent gets it; configuration and secret
 * values are sealed apart and never in a tarball). `docsPath` is relative to the folder and has no `..` (the API's
 * pattern), and the tarball's paths are the packed folder's own, so nothing outside the source is read. Bounded: at most
 * MAX_FILES files and MAX_BYTES in all, the rest left out with `truncated`.
 */
import path from 'node:path';
import type { Revision } from '../store/services.ts';
import type { TarballStore } from './tarballs.ts';

const MAX_FILES = 100;
const MAX_BYTES = 1024 * 1024;
const MARKDOWN = /\.(md|markdown)$/i;

export interface ServiceDocs {
  /** Paths below docsPath, in order; Markdown as written. */
  files: Array<{ path: string; content: string }>;
  truncated: boolean;
}

/**
 * @param ensure makes the revision's tarball present on this replica (another one may have packed it).
 * @throws Error when the revision has no source (no digest).
 */
export async function serviceDocs(
  tarballs: TarballStore,
  revision: Revision,
  docsPath: string,
  ensure: () => Promise<void>,
): Promise<ServiceDocs> {
  if (!revision.digest) throw new Error(`revision ${revision.number} has no source`);
  if (!(await tarballs.find(revision.digest))) await ensure();
  const folder = path.posix.normalize(docsPath).replace(/\/+$/, '');
  const prefix = folder === '.' ? '' : `${folder}/`;
  const docs = [...(await tarballs.files(revision.digest))]
    .filter(([file]) => file.startsWith(prefix) && MARKDOWN.test(file))
    .sort(([a], [b]) => a.localeCompare(b));
  const files: ServiceDocs['files'] = [];
  let bytes = 0;
  for (const [file, content] of docs) {
    if (files.length === MAX_FILES || bytes + content.length > MAX_BYTES) return { files, truncated: true };
    files.push({ path: file.slice(prefix.length), content });
    bytes += content.length;
  }
  return { files, truncated: false };
}
