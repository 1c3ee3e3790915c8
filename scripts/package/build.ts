/**
 * The npm package's build, `npm pack`'s prepack step (scripts/package/main.ts): what the npm package runs instead
 * of the TypeScript sources (Node does not strip types of files under node_modules). Writes lib/cli/, the CLI
 * bundled as the repository's .bundle/ is (scripts/bundle/build.ts); copies the Python templating files to
 * lib/template/, where the bundled modules look for them (lib/ stands for src/, at the same depth, so every path a
 * module finds relative to itself, install/, web/dist and package.json included, holds in both); and builds
 * web/dist, which `gantry server` serves. bin/gantry.js runs src/ when it is there (this repository) and lib/
 * otherwise (the package), so a lib/ left here after packing is never run.
 */
import { cp, glob, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCli } from '../bundle/build.ts';
import { buildWebUiWhenStale } from '../setup/web.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const LIB_DIR = path.join(REPO_ROOT, 'lib');
/** Files of src/ that modules read at run time (the Jinja2 worker and its pins), relative to src/. */
const RUNTIME_FILES = ['template/*.py', 'template/requirements.txt'];

/**
 * Rebuilds lib/ from scratch and web/dist when stale.
 * @throws Error when Rolldown or Vite fails.
 */
export async function buildPackage(report: (line: string) => void): Promise<void> {
  await rm(LIB_DIR, { recursive: true, force: true });
  report('bundling the CLI into lib/cli/ (rolldown)');
  await bundleCli(path.join(LIB_DIR, 'cli'), LIB_DIR);
  for await (const file of glob(RUNTIME_FILES, { cwd: path.join(REPO_ROOT, 'src') })) {
    await cp(path.join(REPO_ROOT, 'src', file), path.join(LIB_DIR, file));
  }
  await buildWebUiWhenStale(report);
}
