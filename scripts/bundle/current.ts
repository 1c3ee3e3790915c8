/**
 * Whether the CLI bundle in .bundle/ (built by setup, see build.ts) was built from the sources as they are now.
 * bin/gantry.js asks on every start in this repository and runs the sources instead when the answer is no, so an
 * edited file runs as edited, never as bundled before the edit. The check stats each input once (~350 files,
 * a few milliseconds) and reads no file but the manifest.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUNDLE_DIR = path.join(REPO_ROOT, '.bundle');
export const MANIFEST_FILE = 'manifest.json';

/** `<bundle>/manifest.json`, written last by the build. */
export interface BundleManifest {
  /** The entry module's file name in the bundle folder. */
  entry: string;
  /** Every repository file the bundle was built from (relative, slash-separated) → its mtime (ms) when read. */
  inputs: Record<string, number>;
}

/**
 * The bundle's entry (a file URL) when every input has the modification time the manifest recorded; undefined
 * when the bundle is missing, its manifest unreadable, or any input changed or is gone.
 */
export function currentBundleEntry(bundleDir: string = BUNDLE_DIR, root: string = REPO_ROOT): string | undefined {
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(readFileSync(path.join(bundleDir, MANIFEST_FILE), 'utf8')) as BundleManifest;
  } catch {
    return undefined;
  }
  for (const [file, modified] of Object.entries(manifest.inputs)) {
    if (statSync(path.join(root, file), { throwIfNoEntry: false })?.mtimeMs !== modified) return undefined;
  }
  return pathToFileURL(path.join(bundleDir, manifest.entry)).href;
}
