/**
 * The npm package's build, `npm pack`'s prepack step (scripts/package/main.ts): what the npm package runs instead of the TypeScript sources (Node does not strip types
 * of files under node_modules). Writes lib/, src/ compiled by tsc with tsconfig.build.json, at the same depth as
 * src/ so every path a module finds relative to itself (install/, web/dist, package.json) holds in both; copies the
 * Python templating files beside the compiled modules; and builds web/dist, which `gantry server` serves.
 * bin/gantry.js runs src/ when it is there (this repository) and lib/ otherwise (the package), so a lib/ left here
 * after packing is never run.
 */
import { cp, glob, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../src/exec.ts';
import { buildWebUiWhenStale } from '../setup/web.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const LIB_DIR = path.join(REPO_ROOT, 'lib');
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** Files of src/ that modules read at run time (the Jinja2 worker and its pins), relative to src/. */
const RUNTIME_FILES = ['template/*.py', 'template/requirements.txt'];

/**
 * Rebuilds lib/ from scratch and web/dist when stale.
 * @throws CommandError when tsc or Vite fails.
 */
export async function buildPackage(report: (line: string) => void): Promise<void> {
  await rm(LIB_DIR, { recursive: true, force: true });
  report('compiling src/ to lib/ (tsc -p tsconfig.build.json)');
  await run(process.execPath, [TSC, '-p', path.join(REPO_ROOT, 'tsconfig.build.json')]);
  for await (const file of glob(RUNTIME_FILES, { cwd: path.join(REPO_ROOT, 'src') })) {
    await cp(path.join(REPO_ROOT, 'src', file), path.join(LIB_DIR, file));
  }
  await buildWebUiWhenStale(report);
}
