/**
 * Flux's source-controller in end-to-end tests, without running it: its real GitRepository (and OCIRepository) CRD, which setup takes
 * from a released source-controller module through the Go module proxy (scripts/setup/tools.ts), and artifacts made the way
 * source-controller makes them — a tar.gz with the files at the root of the archive, its `sha256:<hex>` digest,
 * served over HTTP on 127.0.0.1 and announced in the GitRepository's or OCIRepository's status (written through the
 * status subresource, as the source-controller writes it; both kinds have the same status.artifact).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create } from 'tar';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { kubectl } from './cli.ts';
import { crdsServed } from './crds.ts';
import { startHttpServer, type Route } from './http-server.ts';

export const GIT_REPOSITORY_CRD = 'gitrepositories.source.toolkit.fluxcd.io';
export const HELM_REPOSITORY_CRD = 'helmrepositories.source.toolkit.fluxcd.io';
export const OCI_REPOSITORY_CRD = 'ocirepositories.source.toolkit.fluxcd.io';

/**
 * Installs the GitRepository CRD (server-side, so reruns and other files doing the same are no-ops) and waits until
 * the API server serves source.toolkit.fluxcd.io/v1 gitrepositories — which a controller's discovery at startup
 * must see. Never deleted: other test files may use it.
 */
export async function installGitRepositoryCrd(): Promise<void> {
  await installFluxCrd(GIT_REPOSITORY_CRD);
}

/** The HelmRepository CRD, as installGitRepositoryCrd installs its own. */
export async function installHelmRepositoryCrd(): Promise<void> {
  await installFluxCrd(HELM_REPOSITORY_CRD);
}

/** The OCIRepository CRD, as installGitRepositoryCrd installs its own. */
export async function installOciRepositoryCrd(): Promise<void> {
  await installFluxCrd(OCI_REPOSITORY_CRD);
}

async function installFluxCrd(crd: string): Promise<void> {
  await kubectl([
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=e2e-flux',
    '-f',
    path.join(clusterLayout().crds, `${crd}.yaml`),
  ]);
  await crdsServed([crd]);
}

/** A packed artifact: the tar.gz bytes and their digest in Flux's `<algorithm>:<hex>` form. */
export interface PackedArtifact {
  bytes: Buffer;
  digest: string;
}

/**
 * Packs `files` (path → content) as source-controller packs a revision: a gzipped tar with the files (and their
 * folders) at the root of the archive, no owner names or ids and a fixed modification time, so equal content gives
 * an equal digest.
 */
export async function packArtifact(files: Record<string, string>): Promise<PackedArtifact> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-artifact-'));
  try {
    const root = path.join(scratch, 'files');
    for (const [file, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), content, { mode: 0o644 });
    }
    const archive = path.join(scratch, 'artifact.tar.gz');
    const topLevel = [...new Set(Object.keys(files).map((file) => file.split('/')[0]!))].sort();
    await create({ file: archive, cwd: root, gzip: true, portable: true, mtime: new Date(0) }, topLevel);
    const bytes = await readFile(archive);
    return { bytes, digest: sha256Digest(bytes) };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A made-up commit as source-controller writes revisions of a branch: `main@sha1:<40 hex>`. */
export function gitRevision(branch = 'main'): string {
  return `${branch}@sha1:${randomBytes(20).toString('hex')}`;
}

/** Stands in for source-controller's artifact storage: serves the published bytes on 127.0.0.1. */
export interface ArtifactServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Paths requested so far, in order. */
  readonly requested: string[];
  /** Serves `bytes` at `/<artifactPath>` from now on and returns the full URL. */
  publish(artifactPath: string, bytes: Uint8Array): string;
  close(): Promise<void>;
}

export async function startArtifactServer(): Promise<ArtifactServer> {
  const routes: Record<string, Route> = {};
  const server = await startHttpServer(routes);
  return {
    url: server.url,
    get requested() {
      return server.received.map((request) => request.path);
    },
    publish(artifactPath, bytes) {
      routes[`/${artifactPath}`] = { body: bytes, contentType: 'application/x-gzip' };
      return `${server.url}/${artifactPath}`;
    },
    close: () => server.close(),
  };
}

/** What a GitRepository's status.artifact says (source.toolkit.fluxcd.io/v1 Artifact). */
export interface ArtifactStatus {
  path: string;
  url: string;
  revision: string;
  digest: string;
  lastUpdateTime: string;
  size: number;
}

/** A GitRepository as a user writes it (source-controller would clone `url`; here nothing does). */
export function gitRepository(namespace: string, name: string): Record<string, unknown> {
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'GitRepository',
    metadata: { name, namespace },
    spec: { url: `https://git.example.invalid/${name}.git`, ref: { branch: 'main' }, interval: '1m' },
  };
}

/** An OCIRepository as a user writes it (source-controller would pull `url`; here nothing does). */
export function ociRepository(namespace: string, name: string, url: string): Record<string, unknown> {
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'OCIRepository',
    metadata: { name, namespace },
    spec: { url, ref: { tag: 'latest' }, interval: '1m' },
  };
}

/**
 * Writes status.artifact and a Ready=True condition through the status subresource of the GitRepository (or, with
 * `crd`, the OCIRepository), as source-controller does after storing a revision.
 */
export async function setArtifactStatus(
  namespace: string,
  name: string,
  artifact: ArtifactStatus,
  crd = GIT_REPOSITORY_CRD,
): Promise<void> {
  const now = rfc3339(new Date());
  const message = `stored artifact for revision '${artifact.revision}'`;
  const condition = (type: string) => ({
    type,
    status: 'True',
    reason: 'Succeeded',
    message,
    lastTransitionTime: now,
    observedGeneration: 1,
  });
  const status = { observedGeneration: 1, artifact, conditions: [condition('Ready'), condition('ArtifactInStorage')] };
  await kubectl(['patch', crd, name, '-n', namespace, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
}

/**
 * Publishes `served` on `server` as the artifact of GitRepository (or `kind`) `namespace/name` at `revision` and
 * announces it in its status with `digest` (default: the served bytes' own digest; pass another to announce bytes
 * that do not match).
 */
export async function publishArtifact(
  server: ArtifactServer,
  namespace: string,
  name: string,
  options: { served: PackedArtifact; revision: string; digest?: string; size?: number; kind?: 'GitRepository' | 'OCIRepository' },
): Promise<ArtifactStatus> {
  const kind = options.kind ?? 'GitRepository';
  const digest = options.digest ?? options.served.digest;
  // Named after the commit, as source-controller names them: every revision has a URL of its own (one named after
  // the digest would let a mismatching artifact's URL serve the next, matching, bytes under the old revision).
  const commit = options.revision.split(':').pop()!;
  const artifactPath = `${kind.toLowerCase()}/${namespace}/${name}/${commit}.tar.gz`;
  const artifact: ArtifactStatus = {
    path: artifactPath,
    url: server.publish(artifactPath, options.served.bytes),
    revision: options.revision,
    digest,
    lastUpdateTime: rfc3339(new Date()),
    size: options.size ?? options.served.bytes.byteLength,
  };
  await setArtifactStatus(namespace, name, artifact, kind === 'GitRepository' ? GIT_REPOSITORY_CRD : OCI_REPOSITORY_CRD);
  return artifact;
}

function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}
