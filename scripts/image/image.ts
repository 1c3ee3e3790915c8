/**
 * Gantry's image, built without a container engine: the base layer (cached) and the app layer (layers.ts) assembled
 * by crane in a registry of its own on 127.0.0.1 with the configuration of config.ts, then copied to where the caller
 * wants it: a registry (`--push`) and/or an OCI image layout folder (`--out`). The image is tagged with the package
 * version, which install/ and `gantry controller install` refer to (src/version.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GANTRY_VERSION } from '../../src/version.ts';
import { packGantry } from '../package/pack.ts';
import { type ImageConfig, imageConfig } from './config.ts';
import { crane, startStagingRegistry } from './crane.ts';
import { appLayer, baseLayer, type Layer, mebibytes } from './layers.ts';

export interface ImageBuildOptions {
  /** A repository (`ghcr.io/gantry-dev/gantry`, `127.0.0.1:5000/gantry`), optionally with the package version as tag. */
  push?: string;
  /** A folder to write the image to as an OCI image layout (added to one already there). */
  out?: string;
  report: (line: string) => void;
}

export interface BuiltImage {
  /** The package version, which is the image's tag. */
  version: string;
  /** `sha256:<hex>` of the image manifest. */
  digest: string;
  /** `<repository>:<version>` when pushed. */
  pushed?: string;
  base: Layer;
  app: Layer;
  /** What a pull transfers: the configuration and the layers as the manifest lists them. */
  compressedBytes: number;
  /** The whole build, in seconds. */
  seconds: number;
}

/**
 * Builds the image and pushes it and/or writes it out.
 * @throws Error for a `push` whose tag is not the package version; CommandError naming the failed step (mmdebstrap,
 *   pip, npm, tar, crane) with its stderr.
 */
export async function buildImage(options: ImageBuildOptions): Promise<BuiltImage> {
  const started = performance.now();
  const { report } = options;
  const version = GANTRY_VERSION;
  const target = options.push === undefined ? undefined : pushTarget(options.push, version);
  const base = await baseLayer(report);
  const scratch = await mkdtemp(join(tmpdir(), 'gantry-image-'));
  try {
    const app = await appLayer(await packGantry(scratch, report), join(scratch, 'app.tar.gz'), report);
    const registry = await startStagingRegistry(join(scratch, 'registry'));
    try {
      const staged = `${registry.host}/gantry:${version}`;
      await crane(['append', '--oci-empty-base', `--new_layer=${base.file}`, `--new_layer=${app.file}`, `--new_tag=${staged}`]);
      await crane(['mutate', staged, ...mutateFlags(imageConfig(version)), `--tag=${staged}`]);
      const digest = await crane(['digest', staged]);
      const manifest = JSON.parse(await crane(['manifest', staged])) as { config: { size: number }; layers: Array<{ size: number }> };
      const compressedBytes = manifest.layers.reduce((sum, layer) => sum + layer.size, manifest.config.size);
      report(`image ${digest}: ${mebibytes(compressedBytes)} compressed`);
      if (target) {
        report(`pushing ${target} ...`);
        await crane(['copy', staged, target]);
      }
      if (options.out) {
        report(`writing the OCI image layout ${options.out} ...`);
        await crane(['pull', '--format=oci', staged, options.out]);
      }
      const seconds = (performance.now() - started) / 1000;
      report(`built in ${seconds.toFixed(1)}s`);
      return { version, digest, ...(target ? { pushed: target } : {}), base, app, compressedBytes, seconds };
    } finally {
      await registry.stop();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** `repository:version` from `--push`'s repository, which may carry that tag but no other. */
function pushTarget(reference: string, version: string): string {
  if (reference.includes('@')) throw new Error(`--push ${reference}: give a repository, not a digest`);
  // A colon before the last slash belongs to the registry's port.
  const name = reference.slice(reference.lastIndexOf('/') + 1);
  if (!name.includes(':')) return `${reference}:${version}`;
  if (name.endsWith(`:${version}`)) return reference;
  throw new Error(`--push ${reference}: the tag must be the package version ${version} (install/ refers to the image by it), or left out`);
}

/** `crane mutate` flags that set `config`, and the platform of the layers' binaries (this machine's). */
function mutateFlags(config: ImageConfig): string[] {
  const architecture = process.arch === 'x64' ? 'amd64' : process.arch;
  return [
    `--user=${config.user}`,
    `--entrypoint=${config.entrypoint.join(',')}`,
    `--cmd=${config.cmd.join(',')}`,
    ...config.env.map(([name, value]) => `--env=${name}=${value}`),
    // crane reads label flags as CSV: a quoted field keeps the description's commas.
    ...Object.entries(config.labels).map(([name, value]) => `--label="${`${name}=${value}`.replaceAll('"', '""')}"`),
    `--set-platform=linux/${architecture}`,
  ];
}
