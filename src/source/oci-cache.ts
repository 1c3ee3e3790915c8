/**
 * The cache of pulled OCI artifacts every part of Gantry shares (OCI includes, the controller's `spec.source.oci`):
 * one unpacked snapshot per manifest digest, never changed once made. A tag is resolved to its digest on every pull
 * (the tag may have moved); a digest whose snapshot exists needs no request at all. Snapshots are unpacked in a
 * temporary folder next to their place and renamed into it, so a reader never sees half an artifact and concurrent
 * pulls of one digest are harmless; snapshots nobody used for a while are swept away (src/source/cache-entries.ts).
 */
import path from 'node:path';
import { populateAtomically } from '../cache-entry.ts';
import { isDirectory } from '../files.ts';
import { markUsed, removeUnused } from './cache-entries.ts';
import { unpackArtifact } from './oci-artifact.ts';
import { OciClient, parseOciUrl } from './oci-client.ts';
import type { RegistryCredentials } from './oci-credentials.ts';

/** Which manifest of a repository: a tag, or a digest (which wins when both are set); `latest` when neither. */
export interface OciRef {
  tag?: string | undefined;
  digest?: string | undefined;
}

export interface OciSnapshot {
  /** Folder holding the artifact's files; never modified after creation. */
  dir: string;
  /** The manifest's digest, `sha256:<hex>`. */
  digest: string;
}

/**
 * A handle on one snapshot folder (`root`), shared by every caller of a process and by processes sharing the folder:
 * concurrent pulls are safe without any lock. A pull or resolve that asks the registry makes its own client and
 * closes it before returning; the cache holds nothing to close, and sweep() removes what went unused.
 */
export class OciCache {
  readonly root: string;

  /** @param root folder of the snapshots (one `<hex of the digest>` folder each). */
  constructor(root: string) {
    this.root = root;
  }

  /**
   * The unpacked artifact `ref` names in the repository `url` (`oci://host/repository`, without tag or digest, as
   * Kluctl's oci includes and OCI sources require), pulled with the matching entry of `credentials`.
   * @throws Error naming the URL when it is malformed or carries a tag or digest, the registry refuses the
   *   credentials, the manifest does not exist, or the artifact is not a gzipped tarball.
   */
  async pull(url: string, ref: OciRef | undefined, credentials: RegistryCredentials, signal?: AbortSignal): Promise<OciSnapshot> {
    const reference = parseOciUrl(url);
    if (reference.tag !== undefined || reference.digest !== undefined)
      throw new Error(`'${url}': the URL must not contain a tag or digest; use 'ref' ({tag: …} or {digest: …})`);
    if (ref?.digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(ref.digest))
      throw new Error(`${url}: ref.digest '${ref.digest}' is not a sha256 digest (sha256:<64 hex digits>)`);
    const known = ref?.digest && this.snapshotDir(ref.digest);
    if (known && (await isDirectory(known))) return this.used(known, ref.digest as string);
    const client = new OciClient(reference, credentials.find(reference.registry, reference.repository), 'pull', signal);
    try {
      return await this.fetch(client, ref?.digest ?? ref?.tag ?? 'latest');
    } finally {
      await client.close();
    }
  }

  /**
   * The digest of the manifest `ref` names now, without pulling the artifact: a digest names itself, a tag is asked
   * of the registry (it may have moved).
   * @throws Error as pull does.
   */
  async resolve(url: string, ref: OciRef | undefined, credentials: RegistryCredentials, signal?: AbortSignal): Promise<string> {
    if (ref?.digest !== undefined) return ref.digest;
    const reference = parseOciUrl(url);
    const client = new OciClient(reference, credentials.find(reference.registry, reference.repository), 'pull', signal);
    try {
      return (await client.manifest(ref?.tag ?? 'latest')).digest;
    } finally {
      await client.close();
    }
  }

  /**
   * Removes snapshots (and leftovers of interrupted pulls) nobody used for `maxAgeMs`.
   * @returns how many were removed.
   */
  async sweep(maxAgeMs: number): Promise<number> {
    return (await removeUnused(this.root, maxAgeMs)).length;
  }

  private async fetch(client: OciClient, tagOrDigest: string): Promise<OciSnapshot> {
    const { digest, manifest } = await client.manifest(tagOrDigest);
    const dir = this.snapshotDir(digest);
    if (await isDirectory(dir)) return this.used(dir, digest);
    await populateAtomically(dir, (files) => unpackArtifact(client, manifest, files));
    return this.used(dir, digest);
  }

  private snapshotDir(digest: string): string {
    return path.join(this.root, digest.replace(/^sha256:/, ''));
  }

  private async used(dir: string, digest: string): Promise<OciSnapshot> {
    await markUsed(dir);
    return { dir, digest };
  }
}
