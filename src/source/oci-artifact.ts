/**
 * Kluctl projects as OCI artifacts, in the format `kluctl oci push` writes (kluctl's cmd/kluctl/commands/cmd_oci_push.go
 * through fluxcd/pkg/oci's Push, the format Flux's OCIRepository reads):
 * - one layer, `application/vnd.cncf.flux.content.v1.tar+gzip`: a gzipped tar of the project folder, paths relative
 *   to it, owners and times cleared, without `.git` and without what the folder's `.gitignore` files exclude
 *   (kluctl's LoadGitignorePaths);
 * - a config blob of media type `application/vnd.cncf.flux.config.v1+json` (an image config with `created` and the
 *   layer's diff_id);
 * - an OCI image manifest annotated with `org.opencontainers.image.created` (RFC 3339), `.source` (the git origin)
 *   and `.revision` (the commit), `io.kluctl.image.git_info` (kluctl's GitInfo as JSON) and the user's annotations.
 * Pulling takes the manifest's first layer and unpacks it when it is a gzipped tarball, skipping links, as kluctl's
 * pkg/oci/pull.go does.
 */
import { Stats } from 'node:fs';
import { readdir, readFile, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import ignore, { type Ignore } from 'ignore';
import type { Tools } from '../tools.ts';
import { OCI_MANIFEST_MEDIA_TYPE, sha256Digest, type OciClient, type OciManifest } from './oci-client.ts';

const FLUX_CONFIG_MEDIA_TYPE = 'application/vnd.cncf.flux.config.v1+json';
const FLUX_CONTENT_MEDIA_TYPE = 'application/vnd.cncf.flux.content.v1.tar+gzip';
const GIT_INFO_ANNOTATION = 'io.kluctl.image.git_info';
const CREATED_ANNOTATION = 'org.opencontainers.image.created';
const SOURCE_ANNOTATION = 'org.opencontainers.image.source';
const REVISION_ANNOTATION = 'org.opencontainers.image.revision';

/** kluctl's GitInfo (lib/git/types/git_info.go): where the pushed folder sits in its git work tree. */
export interface GitInfo {
  url: string | null;
  ref: { branch?: string; tag?: string } | null;
  subDir: string;
  commit: string;
  dirty: boolean;
}

/** A packed project: the layer (gzipped tar) and the digest of the tar inside it. */
export interface PackedProject {
  layer: Buffer;
  diffId: string;
}

/**
 * Packs `dir` into the artifact's layer.
 * @throws Error naming the folder when it cannot be read.
 */
export async function packProject(dir: string): Promise<PackedProject> {
  const ignores = await gitignoreRules(dir);
  const entries = (await readdir(dir)).filter((entry) => !isExcluded(entry, true, ignores)).sort();
  const chunks: Buffer[] = [];
  const filter = (file: string, stat: object) => !isExcluded(file, stat instanceof Stats && stat.isDirectory(), ignores);
  const { create } = await import('tar');
  const stream = create({ cwd: dir, portable: true, mtime: new Date(0), filter }, entries);
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  const tarball = Buffer.concat(chunks);
  return { layer: await promisify(gzip)(tarball), diffId: sha256Digest(tarball) };
}

/** A folder's `.gitignore` rules, for paths relative to the packed folder. */
interface FolderIgnore {
  /** Relative to the packed folder, '' for itself. */
  folder: string;
  rules: Ignore;
}

/** Every `.gitignore` below `dir` (not above it: kluctl reads them from the pushed folder down). */
async function gitignoreRules(dir: string): Promise<FolderIgnore[]> {
  const found: FolderIgnore[] = [];
  async function walk(relative: string): Promise<void> {
    const entries = await readdir(path.join(dir, relative), { withFileTypes: true });
    const text = await readFile(path.join(dir, relative, '.gitignore'), 'utf8').catch(() => undefined);
    if (text !== undefined) found.push({ folder: relative, rules: ignore().add(text) });
    for (const entry of entries) if (entry.isDirectory() && entry.name !== '.git') await walk(path.posix.join(relative, entry.name));
  }
  await walk('');
  return found;
}

/** Whether the tar leaves out `file` (relative, slash-separated): `.git`, or what a `.gitignore` above it excludes. */
function isExcluded(file: string, isDirectory: boolean, ignores: readonly FolderIgnore[]): boolean {
  const normalized = file.replace(/^\.\//, '');
  if (normalized.split('/').includes('.git')) return true;
  return ignores.some(({ folder, rules }) => {
    if (folder && !normalized.startsWith(`${folder}/`)) return false;
    const relative = folder ? normalized.slice(folder.length + 1) : normalized;
    return relative !== '' && rules.ignores(isDirectory ? `${relative}/` : relative);
  });
}

/**
 * Where `dir` sits in its git work tree, as kluctl's BuildGitInfo reports it; all empty outside a work tree.
 */
export async function gitInfoOf(dir: string, tools: Tools): Promise<GitInfo> {
  const git = async (...args: string[]) => (await tools.run('git', ['-C', dir, ...args]).catch(() => undefined))?.stdout.trim();
  const root = await git('rev-parse', '--show-toplevel');
  if (!root) return { url: null, ref: null, subDir: '', commit: '', dirty: false };
  const [commit, branch, tag, url, status] = await Promise.all([
    git('rev-parse', '--verify', '-q', 'HEAD'),
    git('symbolic-ref', '-q', '--short', 'HEAD'),
    git('describe', '--tags', '--exact-match', 'HEAD'),
    git('remote', 'get-url', 'origin'),
    git('status', '--porcelain'),
  ]);
  const subDir = path.relative(root, path.resolve(dir)).split(path.sep).join('/');
  return {
    url: url || null,
    ref: branch ? { branch } : tag ? { tag } : null,
    subDir,
    commit: commit ?? '',
    dirty: Boolean(status),
  };
}

/**
 * The annotations `kluctl oci push` writes: created, source and revision (always present, possibly empty, as
 * fluxcd/pkg/oci's Metadata.ToAnnotations writes them), git_info, and `extra` over them.
 */
export function artifactAnnotations(gitInfo: GitInfo, created: Date, extra: Readonly<Record<string, string>>): Record<string, string> {
  return {
    [CREATED_ANNOTATION]: created.toISOString().replace(/\.\d+Z$/, 'Z'),
    [SOURCE_ANNOTATION]: gitInfo.url ?? '',
    [REVISION_ANNOTATION]: gitInfo.commit,
    ...extra,
    [GIT_INFO_ANNOTATION]: JSON.stringify(gitInfo),
  };
}

/**
 * Uploads the packed project's blobs and pushes its manifest under `tag`; returns the manifest's digest.
 * @throws Error naming the URL when the registry refuses.
 */
export async function pushProject(
  client: OciClient,
  tag: string,
  packed: PackedProject,
  annotations: Record<string, string>,
): Promise<string> {
  const config = Buffer.from(
    JSON.stringify({
      architecture: '',
      created: annotations[CREATED_ANNOTATION],
      os: '',
      rootfs: { type: 'layers', diff_ids: [packed.diffId] },
      config: {},
    }),
  );
  const configDigest = await client.uploadBlob(config);
  const layerDigest = await client.uploadBlob(packed.layer);
  const manifest: OciManifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    config: { mediaType: FLUX_CONFIG_MEDIA_TYPE, digest: configDigest, size: config.byteLength },
    layers: [{ mediaType: FLUX_CONTENT_MEDIA_TYPE, digest: layerDigest, size: packed.layer.byteLength }],
    annotations,
  };
  return client.pushManifest(tag, manifest);
}

/**
 * Downloads the first layer of `manifest` beside `destination` and unpacks it into `destination` (created).
 * @throws Error naming the URL when the artifact has no layer or its layer is not a gzipped tarball.
 */
export async function unpackArtifact(client: OciClient, manifest: OciManifest, destination: string): Promise<void> {
  const [layer] = manifest.layers;
  if (!layer) throw new Error(`${client.url}: the artifact has no layers`);
  const file = `${destination}.layer`;
  try {
    await client.downloadBlob(layer.digest, file);
    if (!(await isGzip(file)))
      throw new Error(`${client.url}: the artifact's layer (${layer.mediaType}) is not a gzipped tarball, as kluctl oci push writes it`);
    await mkdir(destination, { recursive: true });
    // Loaded here, not with the module (~16 ms): a command whose project has no OCI include never unpacks one.
    const { extract } = await import('tar');
    await extract({ file, cwd: destination, strict: true, filter: (_path, entry) => !('type' in entry) || !/Link$/.test(entry.type) });
  } finally {
    await rm(file, { force: true });
  }
}

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}
