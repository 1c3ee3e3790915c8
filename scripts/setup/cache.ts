/**
 * Where the machine-wide tool cache lives and how things enter it. The cache is outside the clone, so a fresh
 * clone (CI, a second checkout) reuses tools that took many minutes to build.
 */
import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** `$GANTRY_CACHE_DIR`, else `${XDG_CACHE_HOME:-$HOME/.cache}/gantry`. */
export function cacheRoot(): string {
  if (process.env.GANTRY_CACHE_DIR) return process.env.GANTRY_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'gantry');
}

/** The directory holding one built tool: `<cache>/tools/<tool>-<version>/` (its binary is in `bin/`). */
export function toolDir(tool: string, version: string): string {
  return join(cacheRoot(), 'tools', `${tool}-${version}`);
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
