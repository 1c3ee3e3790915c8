/**
 * Where the machine-wide tool cache lives and how things enter it. The cache is outside the clone, so a fresh
 * clone (CI, a second checkout) reuses tools that took many minutes to build.
 */
import { access, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** `$GANTRY_CACHE_DIR`, else `${XDG_CACHE_HOME:-$HOME/.cache}/gantry`. */
export function cacheRoot(): string {
  if (process.env.GANTRY_CACHE_DIR) return process.env.GANTRY_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'gantry');
}

/** The directory holding one built tool: `<cache>/tools/<tool>-<version>/` (its binary is in `bin/`). */
export function toolDir(tool: string, version: string): string {
  return join(cacheRoot(), 'tools', `${tool}-${version}`);
}

/**
 * Fills `finalDir` by letting `fill` write into a fresh temporary sibling directory, then renaming that into
 * place; an interrupted or failed `fill` therefore never leaves a partial entry behind. When another process
 * completed the same entry meanwhile, its copy is kept and ours discarded.
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

/** Whether a cache entry (or any path) exists; entries appear only complete, so existing means usable. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
