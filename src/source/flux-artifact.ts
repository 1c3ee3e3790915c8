/**
 * Flux interop: a KluctlDeployment may take its project from a Flux source (`spec.sourceRef` to a
 * source.toolkit.fluxcd.io/v1 GitRepository or OCIRepository), as the Flux Kluctl controller did. The
 * source-controller publishes each revision of either kind as a tar.gz artifact (`status.artifact.url`, `.digest` = `sha256:<hex>`, `.revision`); it is
 * downloaded, checked against the digest, and unpacked once per digest into the cache (a temporary folder renamed
 * into place, so readers never see half an artifact); artifacts nobody used for a while are swept away.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import type { Cluster } from '../kube/cluster.ts';
import { populateAtomically } from '../cache-entry.ts';
import { isDirectory, writeHashed } from '../files.ts';
import { markUsed, removeUnused } from './cache-entries.ts';

export const FLUX_SOURCE_GROUP = 'source.toolkit.fluxcd.io';

/** The Flux source kinds whose artifact can hold a Kluctl project (both have the same status.artifact). */
export const FLUX_SOURCE_KINDS = ['GitRepository', 'OCIRepository'] as const;
export type FluxSourceKind = (typeof FLUX_SOURCE_KINDS)[number];

/** Longest wait for the artifact server's headers, and between two chunks of the body, in ms. */
const DOWNLOAD_TIMEOUT_MS = 60_000;

export interface FluxArtifact {
  /** Folder holding the artifact's files. */
  dir: string;
  /** Flux's revision string, e.g. `main@sha1:1a2b…` or `latest@sha256:3c4d…`. */
  revision: string;
  digest: string;
}

interface FluxSourceStatus {
  artifact?: { url?: string; digest?: string; revision?: string };
}

/**
 * The unpacked artifact of the GitRepository or OCIRepository (`kind`) `namespace/name`.
 * @throws Error naming the source when it does not exist or has no artifact yet, and when the download fails or does
 *   not match its digest.
 */
export async function fetchFluxArtifact(
  cluster: Cluster,
  source: { kind: FluxSourceKind; namespace: string; name: string },
  cacheRoot: string,
  signal?: AbortSignal,
): Promise<FluxArtifact> {
  const { kind, namespace, name } = source;
  const label = `${kind} ${namespace}/${name}`;
  const repository = await cluster.get({ group: FLUX_SOURCE_GROUP, version: 'v1', kind, namespace, name });
  if (!repository) throw new Error(`${label} not found (is Flux's source-controller installed?)`);
  const artifact = (repository['status'] as FluxSourceStatus | undefined)?.artifact;
  if (!artifact?.url || !artifact.digest) throw new Error(`${label} has no artifact yet`);
  const [algorithm, expected] = artifact.digest.split(':');
  if (algorithm !== 'sha256' || !expected) throw new Error(`${label}: unsupported artifact digest ${artifact.digest}`);
  const dir = path.join(cacheRoot, 'flux-artifacts', expected);
  if (!(await isDirectory(dir))) await downloadAndUnpack(artifact.url, expected, dir, label, signal);
  await markUsed(dir);
  return { dir, revision: artifact.revision ?? '', digest: artifact.digest };
}

/**
 * Removes unpacked artifacts (and leftovers of interrupted downloads) nobody used for `maxAgeMs`.
 * @returns how many were removed.
 */
export async function sweepFluxArtifacts(cacheRoot: string, maxAgeMs: number): Promise<number> {
  return (await removeUnused(path.join(cacheRoot, 'flux-artifacts'), maxAgeMs)).length;
}

async function downloadAndUnpack(
  url: string,
  expectedSha256: string,
  dir: string,
  label: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  await populateAtomically(dir, async (files) => {
    const archive = `${files}.tar.gz`;
    try {
      const actual = await download(url, archive, label, signal);
      if (actual !== expectedSha256)
        throw new Error(`${label}: the artifact's sha256 is ${actual}, not ${expectedSha256} as its status says`);
      const { extract } = await import('tar');
      await extract({ file: archive, cwd: files, strict: true });
    } finally {
      await rm(archive, { force: true });
    }
  });
}

/** Streams `url` into `file`, returning the sha256 (hex) of what was written. */
async function download(url: string, file: string, label: string, signal: AbortSignal | undefined): Promise<string> {
  // A stalled server must not hold a worker for undici's default of 5 minutes per phase.
  const options = { headersTimeout: DOWNLOAD_TIMEOUT_MS, bodyTimeout: DOWNLOAD_TIMEOUT_MS, signal };
  const response = await request(url, options).catch((error: Error) => {
    signal?.throwIfAborted();
    throw new Error(`${label}: downloading ${url} failed: ${error.message}`);
  });
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new Error(`${label}: downloading ${url} failed with HTTP ${response.statusCode}`);
  }
  return writeHashed(response.body, file);
}
