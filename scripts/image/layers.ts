/**
 * The two layers of Gantry's image, as gzip'd tars: the base (root-fs.ts: Debian, Python, git, the tools, Node),
 * built once per machine and kept in the tool cache under the key of its inputs, and the app (Gantry's npm package
 * with its production dependencies in /usr/local), built every time. Tars list entries sorted by name with numeric
 * owners, and gzip stores no name or time, so equal contents give equal layers.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { populateAtomically } from '../../src/cache-entry.ts';
import { run } from '../../src/exec.ts';
import { cacheRoot, pathExists } from '../setup/cache.ts';
import { buildRootFs, rootFsKey } from './root-fs.ts';

export interface Layer {
  /** The gzip'd tar. */
  file: string;
  /** Its size, which is what a registry stores and a node pulls. */
  bytes: number;
  /** Whether it came from the cache. */
  cached: boolean;
  /** Time spent making it, in seconds (0 when cached). */
  seconds: number;
}

/**
 * The base layer: `<cache>/image-base-<rootFsKey>/layer.tar.gz`, built first when missing (40 to 50 s here:
 * mmdebstrap, pip, gzip of ~480 MB to ~160 MiB).
 * @throws what buildRootFs throws.
 */
export async function baseLayer(report: (line: string) => void): Promise<Layer> {
  const entry = join(cacheRoot(), `image-base-${await rootFsKey()}`);
  const file = join(entry, 'layer.tar.gz');
  if (await pathExists(file)) {
    report(`base layer: cached ${file}`);
    return { file, bytes: (await stat(file)).size, cached: true, seconds: 0 };
  }
  const started = performance.now();
  report(`base layer: building ${entry} ...`);
  await populateAtomically(entry, async (temp) => {
    const root = join(temp, 'root');
    await buildRootFs(root, report);
    await writeLayer(root, join(temp, 'layer.tar.gz'));
    await rm(root, { recursive: true });
  });
  const layer = { file, bytes: (await stat(file)).size, cached: false, seconds: (performance.now() - started) / 1000 };
  report(`base layer: built in ${layer.seconds.toFixed(1)}s, ${mebibytes(layer.bytes)} compressed`);
  return layer;
}

/**
 * The app layer, written to `file`: the npm package `packageFile` (a `gantry-<version>.tgz`) installed globally into
 * /usr/local with production dependencies only, which puts `gantry` on the image's PATH (/usr/local/bin/gantry ->
 * ../lib/node_modules/gantry/bin/gantry.js). Install scripts do not run: they would build for the host's Node, and
 * the native dependencies ship prebuilt binaries (better-sqlite3's N-API prebuilds, @node-rs/argon2's per-platform
 * packages). Every entry gets the time SOURCE_DATE_EPOCH (default 0), owner root and permissions rw-r--r-- or
 * rwxr-xr-x, whatever npm and the umask left.
 * @throws CommandError when npm cannot install the package (e.g. the registry is unreachable).
 */
export async function appLayer(packageFile: string, file: string, report: (line: string) => void): Promise<Layer> {
  const started = performance.now();
  const stage = await mkdtemp(join(tmpdir(), 'gantry-image-app-'));
  try {
    report(`app layer: npm install --global ${packageFile} (production dependencies) ...`);
    await run('npm', [
      'install',
      '--global',
      `--prefix=${join(stage, 'usr', 'local')}`,
      '--omit=dev',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--no-update-notifier',
      packageFile,
    ]);
    await writeLayer(stage, file, { mtime: Number(process.env.SOURCE_DATE_EPOCH ?? 0), normalize: true });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  const layer = { file, bytes: (await stat(file)).size, cached: false, seconds: (performance.now() - started) / 1000 };
  report(`app layer: built in ${layer.seconds.toFixed(1)}s, ${mebibytes(layer.bytes)} compressed`);
  return layer;
}

/**
 * Writes the contents of `dir` (not `dir` itself) as a gzip'd tar (GNU format, which Go's archive/tar, hence every
 * container runtime, reads) to `file`.
 * @param options.mtime gives every entry this time (seconds since 1970) instead of its own.
 * @param options.normalize gives every entry owner root and permissions that only the owner can write.
 */
async function writeLayer(dir: string, file: string, options: { mtime?: number; normalize?: boolean } = {}): Promise<void> {
  const entries = (await readdir(dir)).sort();
  await run('tar', [
    '--create',
    `--file=${file}`,
    `--directory=${dir}`,
    '--use-compress-program=gzip -n',
    '--format=gnu',
    '--sort=name',
    '--numeric-owner',
    ...(options.mtime === undefined ? [] : [`--mtime=@${options.mtime}`]),
    ...(options.normalize ? ['--owner=0', '--group=0', '--mode=u+rwX,go+rX,go-w'] : []),
    '--',
    ...entries,
  ]);
}

/** `bytes` in MiB with one decimal, for reports. */
export function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
