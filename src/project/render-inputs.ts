/**
 * What a render read beyond the project's own files and the target's request: the API server reads Helm made
 * (`lookup`, discovery), the commits its git includes and git vars sources resolved to, the digests of its OCI
 * includes, and why a render depends on something that cannot be checked cheaply (an HTTP vars source, sops keys).
 * target/render-cache.ts reuses a render only when it recorded no such reason, every recorded read answers the same
 * again, and every git and OCI ref still names the same commit or manifest.
 */
import { createHash } from 'node:crypto';
import type { GitRef } from '../source/git-cache.ts';
import type { OciRef } from '../source/oci-cache.ts';
import { canonicalJson, isPlainObject } from '../values.ts';

/** One GET of the API server, as it was answered during the render. */
export interface KubeRead {
  /** Path and query below the API server's root. */
  path: string;
  /** The Accept header it was sent with: the answer's form depends on it (aggregated discovery, tables). */
  accept: string;
  /** readDigest of the answer. */
  digest: string;
}

/** A git include or vars source as the render resolved it: the repository, the ref it named, and its commit then. */
export interface GitRead {
  url: string;
  ref: GitRef;
  commit: string;
}

/** An OCI include as the render resolved it: the repository, the ref it named, and its manifest's digest then. */
export interface OciRead {
  url: string;
  ref: OciRef | undefined;
  digest: string;
}

/**
 * The record of one render's outside reads, made by RenderCache.lookup and filled while the render runs (Helm's
 * reads of the API server, git and OCI includes, vars sources); RenderCache.save stores the reads with the render
 * unless a reason forbids its reuse. Each read is kept once, the first answer winning, in the order first recorded.
 */
export class RenderInputs {
  private readonly recorded = new Map<string, KubeRead>();
  private readonly gitRecorded = new Map<string, GitRead>();
  private readonly ociRecorded = new Map<string, OciRead>();
  private readonly reasons = new Set<string>();

  /** Notes that the render depends on something no later run can check, e.g. `vars source 'http' in deployment.yaml`. */
  cannotReuse(reason: string): void {
    this.reasons.add(reason);
  }

  /** Records a read; a second read of the same path and Accept keeps the first answer's digest. */
  recordRead(read: KubeRead): void {
    const key = `${read.accept}\n${read.path}`;
    if (!this.recorded.has(key)) this.recorded.set(key, read);
  }

  get reads(): KubeRead[] {
    return [...this.recorded.values()];
  }

  /** Records the commit a git ref resolved to; the same repository and ref twice keep the first. */
  recordGitRead(read: GitRead): void {
    const key = JSON.stringify([read.url, read.ref]);
    if (!this.gitRecorded.has(key)) this.gitRecorded.set(key, read);
  }

  get gitReads(): GitRead[] {
    return [...this.gitRecorded.values()];
  }

  /** Records the digest an OCI include's ref resolved to; the same repository and ref twice keep the first. */
  recordOciRead(read: OciRead): void {
    const key = JSON.stringify([read.url, read.ref ?? null]);
    if (!this.ociRecorded.has(key)) this.ociRecorded.set(key, read);
  }

  get ociReads(): OciRead[] {
    return [...this.ociRecorded.values()];
  }

  /** Why the render must not be reused; empty when it may be. */
  get notReusable(): string[] {
    return [...this.reasons];
  }
}

/**
 * The digest of an API server's answer: its status and, for a success, its JSON body with stable key order. A
 * list's own resourceVersion is left out: it is the cluster's current revision, which any write anywhere moves,
 * while the items' resourceVersions still change with the items.
 */
export function readDigest(status: number, body: unknown): string {
  const kept = status < 300 && isPlainObject(body) && isPlainObject(body['metadata']) ? withoutListRevision(body) : body;
  return createHash('sha256')
    .update(`${status}\n${status < 300 ? canonicalJson(kept) : ''}`)
    .digest('hex');
}

function withoutListRevision(body: Record<string, unknown>): unknown {
  if (!Array.isArray(body['items'])) return body;
  const { resourceVersion: _, ...metadata } = body['metadata'] as Record<string, unknown>;
  return { ...body, metadata };
}
