/**
 * How an entry enters a cache shared by processes (tools, Gantry's Python env): built aside, renamed into place, so
 * an entry that exists is complete.
 */
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Fills `finalDir` by letting `fill` write into a fresh temporary sibling directory, then renaming that into
 * place; an interrupted or failed `fill` therefore never leaves a partial entry behind. When another process
 * completed the same entry meanwhile, its copy is kept and ours discarded.
 * @throws what `fill` throws, or the rename's error other than "already there".
 */
export async function populateAtomically(finalDir: string, fill: (tempDir: string) => Promise<void>): Promise<void> {
  await mkdir(dirname(finalDir), { recursive: true });
  const tempDir = await mkdtemp(`${finalDir}.partial-`);
  try {
    await fill(tempDir);
  } catch (error) {
    await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
  try {
    await rename(tempDir, finalDir);
  } catch (error) {
    await rm(tempDir, { recursive: true, force: true });
    if (!isAlreadyPopulated(error)) throw error;
  }
}

function isAlreadyPopulated(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOTEMPTY' || code === 'EEXIST';
}
