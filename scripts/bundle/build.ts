/**
 * The CLI bundle: src/cli/main.ts with the packages that make up most of its module graph, bundled by Rolldown
 * (Vite's bundler) into .bundle/, which bin/gantry.js runs instead of the sources while they are unchanged
 * (current.ts). From the sources a command loads ~2,100 modules (@kubernetes/client-node's generated API alone
 * is 868, typebox 679), ~300 ms of a 1.1 s render of 1,000 objects; from the bundle it loads a few dozen in
 * ~90 ms. Every verb stays a chunk of its own, loaded only when it runs, as main.ts's catalogue intends.
 *
 * Only BUNDLED_PACKAGES (and what they import) are bundled: they are plain JavaScript that never looks for files
 * beside itself. Every other package is imported from node_modules as usual, because some do look (fastify's
 * swagger UI serves its own folder, pino finds its transports and better-sqlite3 its binding by `__dirname`).
 * Gantry's own modules that find files by `import.meta.url` (the Jinja2 worker, install/, web/dist) get the URL
 * of their source file, so those files are read from the repository as before. The npm package ships the same
 * bundle (bundleCli, scripts/package/build.ts).
 */
import { mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'rolldown';
import { BUNDLE_DIR, type BundleManifest, currentBundleEntry, MANIFEST_FILE, REPO_ROOT } from './current.ts';

const ENTRY = path.join(REPO_ROOT, 'src/cli/main.ts');
const THIS_FILE = fileURLToPath(import.meta.url);
const SRC_DIR = path.join(REPO_ROOT, 'src');
/** npm's copy of the lockfile, rewritten by every install: a changed package makes the bundle stale. */
const INSTALLED_LOCKFILE = 'node_modules/.package-lock.json';
/**
 * Measured by the modules a render loads from the sources (together 1,840 of 2,099), and the small packages a deploy
 * loads whole (diff alone is 19 files).
 */
const BUNDLED_PACKAGES = new Set([
  '@kubernetes/client-node',
  'typebox',
  'execa',
  'undici',
  'yaml',
  'commander',
  'diff',
  'limiter',
  'p-limit',
  'jsonpath-plus',
  'ignore',
]);

/**
 * Builds .bundle/ unless it is current. The build goes to a folder of its own beside it and replaces .bundle/ only
 * when complete, so a concurrent `gantry` runs either the old bundle or the sources, never half a bundle.
 * @throws Error from Rolldown when a module fails to bundle.
 */
export async function buildCliBundleWhenStale(report: (line: string) => void): Promise<void> {
  if (currentBundleEntry()) return;
  report('bundling the CLI into .bundle/ (rolldown)');
  const staging = await mkdtemp(path.join(REPO_ROOT, '.bundle-'));
  try {
    await buildCliBundle(staging);
    await rm(BUNDLE_DIR, { recursive: true, force: true });
    await rename(staging, BUNDLE_DIR);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Bundles the CLI into `outDir`, an empty folder inside the repository (the packages left out are found from
 * there), and writes its manifest (current.ts) last; its entry module exports `main` as src/cli/main.ts does.
 * @throws Error from Rolldown when a module fails to bundle.
 */
export async function buildCliBundle(outDir: string): Promise<void> {
  // Times taken before the build: a file edited while it runs then differs from the manifest, and the bundle is stale.
  const before = await modificationTimes([...(await filesUnder(SRC_DIR)), path.join(REPO_ROOT, 'package.json')]);
  const moduleIds = await bundleCli(outDir, SRC_DIR);
  const inputs: Record<string, number> = {};
  for (const id of moduleIds.filter(isRepositoryFile)) {
    inputs[slashPath(path.relative(REPO_ROOT, id))] = before.get(id) ?? (await stat(id)).mtimeMs;
  }
  inputs[INSTALLED_LOCKFILE] = (await stat(path.join(REPO_ROOT, INSTALLED_LOCKFILE))).mtimeMs;
  // This file decides what goes into the bundle, so a change to it makes the bundle stale too.
  inputs[slashPath(path.relative(REPO_ROOT, THIS_FILE))] = (await stat(THIS_FILE)).mtimeMs;
  const manifest: BundleManifest = { entry: 'main.js', inputs };
  await writeFile(path.join(outDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 1)}\n`);
}

/**
 * Bundles src/cli/main.ts into `outDir` (main.js and its chunks) and returns the ids of every module in it.
 * @param sourcesDir where the files Gantry's modules find beside themselves are at run time: src/ in the
 *   repository; the npm package's lib/, which holds them at the same paths (scripts/package/build.ts).
 * @throws Error from Rolldown when a module fails to bundle.
 */
export async function bundleCli(outDir: string, sourcesDir: string): Promise<string[]> {
  const result = await build({
    input: { main: ENTRY },
    platform: 'node',
    external: (id, importer, isResolved) =>
      !isResolved && isPackageImport(id) && !isInsidePackage(importer) && !BUNDLED_PACKAGES.has(packageName(id)),
    plugins: [sourceImportMetaUrl(outDir, sourcesDir), buildStamp(new Date().toISOString()), nodeHttpWithoutLazyGetters()],
    treeshake: { moduleSideEffects: (id) => !isKubernetesClientModule(id) },
    output: { dir: outDir, format: 'esm', chunkFileNames: '[name]-[hash].js' },
    logLevel: 'warn',
  });
  return result.output.flatMap((output) => (output.type === 'chunk' ? output.moduleIds : []));
}

/** Gives src/build-stamp.ts's BUILD_STAMP the value `stamp`. */
function buildStamp(stamp: string): Plugin {
  return {
    name: 'gantry-build-stamp',
    transform: {
      filter: { id: /\/src\/build-stamp\.ts$/ },
      handler: () => `export const BUILD_STAMP = ${JSON.stringify(stamp)};\n`,
    },
  };
}

/**
 * Serves `node:http` to the bundle as its CommonJS exports (process.getBuiltinModule) instead of Node's ES module
 * facade. Creating that facade reads every export, and three of them are getters that load Node's internal copy of
 * undici, which Gantry never uses: ~5 ms of every cluster command's start on this machine (`gantry deploy --help`,
 * median of 40 runs: 107 → 102 ms). The named exports are the module's other properties, as of the Node that
 * builds, read once as the facade reads them.
 */
function nodeHttpWithoutLazyGetters(): Plugin {
  const UNDICI_GETTERS = new Set(['WebSocket', 'CloseEvent', 'MessageEvent']);
  const id = '\0gantry:node-http';
  return {
    name: 'gantry-node-http',
    resolveId: {
      filter: { id: /^(node:)?http$/ },
      handler: () => id,
    },
    load: {
      filter: { id: /^\0gantry:node-http$/ },
      handler() {
        const names = Object.getOwnPropertyNames(process.getBuiltinModule('node:http')).filter((name) => !UNDICI_GETTERS.has(name));
        return [
          "const http = process.getBuiltinModule('node:http');",
          'export default http;',
          `export const { ${names.join(', ')} } = http;`,
        ].join('\n');
      },
    },
  };
}

/**
 * Rewrites `import.meta.url` in Gantry's modules to their source file's URL under `sourcesDir`, relative to the
 * bundle folder.
 */
function sourceImportMetaUrl(outDir: string, sourcesDir: string): Plugin {
  return {
    name: 'gantry-source-import-meta-url',
    transform: {
      filter: { id: /\/src\/.*\.ts$/, code: 'import.meta.url' },
      handler(code, id) {
        const source = JSON.stringify(slashPath(path.relative(outDir, path.join(sourcesDir, path.relative(SRC_DIR, id)))));
        return code.replaceAll('import.meta.url', `new URL(${source}, import.meta.url).href`);
      },
    },
  };
}

/**
 * The Kubernetes client's modules only define things, but its package does not say so (no `sideEffects: false`),
 * so without this its ~1,500 generated API classes stay in the bundle although Gantry uses only KubeConfig and
 * Watch: the chunk every cluster command loads shrinks from 3.1 to 1.9 MB, ~70 ms less to load.
 */
function isKubernetesClientModule(id: string): boolean {
  return id.includes(`${path.sep}node_modules${path.sep}@kubernetes${path.sep}client-node${path.sep}`);
}

function isPackageImport(id: string): boolean {
  return !id.startsWith('.') && !path.isAbsolute(id) && !id.startsWith('node:') && !id.startsWith('\0');
}

/** An import made by a bundled package goes into the bundle with it (it resolves from that package's folder). */
function isInsidePackage(importer: string | undefined): boolean {
  return importer?.includes(`${path.sep}node_modules${path.sep}`) ?? false;
}

function packageName(id: string): string {
  return id
    .split('/')
    .slice(0, id.startsWith('@') ? 2 : 1)
    .join('/');
}

function isRepositoryFile(id: string): boolean {
  return id.startsWith(REPO_ROOT) && !id.includes(`${path.sep}node_modules${path.sep}`);
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

async function modificationTimes(files: string[]): Promise<Map<string, number>> {
  return new Map(await Promise.all(files.map(async (file) => [file, (await stat(file)).mtimeMs] as const)));
}

function slashPath(file: string): string {
  return file.split(path.sep).join('/');
}
