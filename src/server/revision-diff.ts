/**
 * What changed between two revisions of a service's source: the files of their tarballs compared (the folder at
 * each commit, or a chart's wrapper project), one unified diff per file added, removed or changed. Tarballs hold
 * no configuration or secret values (those are sealed apart), so nothing secret is compared here.
 */
import { createTwoFilesPatch } from 'diff';
import type { Revision } from '../store/services.ts';
import type { TarballStore } from './tarballs.ts';

export interface FileChange {
  path: string;
  change: 'added' | 'removed' | 'changed';
  /** Unified diff, three lines of context; empty for files above MAX_DIFF_BYTES. */
  patch: string;
}

/** Files larger than this are named as changed without their diff. */
const MAX_DIFF_BYTES = 512 * 1024;

/**
 * @param ensure makes a revision's tarball present on this replica (it may have been packed by another one).
 * @throws Error when a revision has no source (no digest).
 */
export async function revisionDiff(
  tarballs: TarballStore,
  from: Revision,
  to: Revision,
  ensure: (revision: Revision) => Promise<void>,
): Promise<FileChange[]> {
  const [before, after] = await Promise.all([from, to].map((revision) => filesOf(tarballs, revision, ensure)));
  const paths = [...new Set([...before!.keys(), ...after!.keys()])].sort();
  return paths.flatMap((file): FileChange[] => {
    const old = before!.get(file);
    const now = after!.get(file);
    if (old === now) return [];
    const change = old === undefined ? 'added' : now === undefined ? 'removed' : 'changed';
    const large = (old?.length ?? 0) > MAX_DIFF_BYTES || (now?.length ?? 0) > MAX_DIFF_BYTES;
    const patch = large
      ? ''
      : createTwoFilesPatch(file, file, old ?? '', now ?? '', `#${from.number}`, `#${to.number}`, { context: 3 })
          .split('\n')
          .slice(2)
          .join('\n')
          .trimEnd();
    return [{ path: file, change, patch }];
  });
}

async function filesOf(
  tarballs: TarballStore,
  revision: Revision,
  ensure: (revision: Revision) => Promise<void>,
): Promise<Map<string, string>> {
  if (!revision.digest) throw new Error(`revision ${revision.number} has no source`);
  if (!(await tarballs.find(revision.digest))) await ensure(revision);
  return await tarballs.files(revision.digest);
}
