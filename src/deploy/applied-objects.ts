/**
 * What was last applied to each object, so that applying an object nobody changed since can be skipped without a
 * request, as Plural's deployment-operator skips objects whose manifest SHA and live state are unchanged since its
 * last apply (its resource cache's manifest, apply and server SHAs). An object is skipped only when both hold:
 * - its rendered manifest, with the field manager, hashes as it did when it was applied (a field removed from the
 *   render changes it, so the apply that removes the field still happens);
 * - the live object read this run (same uid), projected onto the manifest's fields, hashes as the API server's answer
 *   to that apply did. The projection keeps exactly the values a re-apply could change: anyone's edit of them makes
 *   the object apply again, while what controllers add beside them (status, a Deployment's revision annotation, a
 *   Service's clusterIP) does not.
 * Secrets are always applied: a record would hold a hash of their values.
 *
 * A long-running role keeps one per cluster in memory; a command loads it from, and saves it to, a file in the cache.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isSecret, type KubeObject } from '../kube/object.ts';
import { projection } from './projection.ts';
import { hashOf, isPlainObject } from '../values.ts';

interface AppliedRecord {
  /** sha256 of the field manager and the rendered manifest. */
  manifest: string;
  /** sha256 of the apply's answer projected onto the manifest's fields. */
  live: string;
  /** Epoch ms of the last apply or skip. */
  usedAt: number;
}

/** Records unused this long are dropped when saved, and the oldest beyond MAX_RECORDS (objects long deleted). */
const RECORD_TTL_MS = 7 * 24 * 3600_000;
const MAX_RECORDS = 100_000;

/**
 * The records of one cluster's applies, by object uid: `unchanged` before an apply says whether it may be skipped,
 * `forget` and `record` around an apply keep them true. Loaded from and saved to one file (appliedObjectsFile) by a
 * command, which calls save() once it is done; a long-running role keeps it in memory. Not safe for two processes
 * sharing a file at once: save replaces the file whole, so the last save wins.
 */
export class AppliedObjects {
  /** By the object's uid. */
  private readonly records = new Map<string, AppliedRecord>();
  private readonly file: string | undefined;

  /** @param file where load/save keep the records; undefined keeps them in memory only. */
  constructor(file?: string) {
    this.file = file;
  }

  /** The records saved in `file`; an absent or unreadable file gives none (every object is applied). */
  static async load(file: string): Promise<AppliedObjects> {
    const applied = new AppliedObjects(file);
    const saved = await readFile(file, 'utf8')
      .then((text) => JSON.parse(text) as unknown)
      .catch(() => undefined);
    if (isPlainObject(saved) && isPlainObject(saved['records']))
      for (const [uid, record] of Object.entries(saved['records'])) if (isRecord(record)) applied.records.set(uid, record);
    return applied;
  }

  /** True when applying `object` over `live` would change nothing (see the module's comment). */
  unchanged(object: KubeObject, live: KubeObject, fieldManager: string): boolean {
    const uid = live.metadata.uid;
    const record = uid === undefined ? undefined : this.records.get(uid);
    if (!record) return false;
    if (record.manifest !== manifestHash(object, fieldManager) || record.live !== liveHash(live, object)) return false;
    record.usedAt = Date.now();
    return true;
  }

  /** Forgets what was applied to `live` (about to be sent again): only a plain apply's answer is trusted later. */
  forget(live: KubeObject): void {
    if (live.metadata.uid !== undefined) this.records.delete(live.metadata.uid);
  }

  /** Remembers that `object` was applied and the API server answered `answer`. */
  record(object: KubeObject, answer: KubeObject, fieldManager: string): void {
    const uid = answer.metadata.uid;
    if (uid === undefined || isSecret(object)) return;
    this.records.delete(uid);
    this.records.set(uid, { manifest: manifestHash(object, fieldManager), live: liveHash(answer, object), usedAt: Date.now() });
    if (this.records.size > MAX_RECORDS) this.records.delete(this.records.keys().next().value as string);
  }

  /** Writes the records to the file (replacing it whole, readable by its owner only); a no-op without a file. */
  async save(): Promise<void> {
    if (!this.file) return;
    const oldest = Date.now() - RECORD_TTL_MS;
    const records = Object.fromEntries([...this.records].filter(([, record]) => record.usedAt >= oldest));
    await mkdir(path.dirname(this.file), { recursive: true });
    const temp = `${this.file}.${process.pid}.partial`;
    await writeFile(temp, JSON.stringify({ records }), { mode: 0o600 });
    await rename(temp, this.file);
  }
}

/**
 * The file a command keeps its records in: one per API server and discriminator, so commands deploying different
 * targets at once do not overwrite each other's records (one target's deploys are serialized by its lock).
 */
export function appliedObjectsFile(cacheDir: string, server: string, discriminator: string): string {
  const name = createHash('sha256').update(`${server}\0${discriminator}`).digest('hex').slice(0, 32);
  return path.join(cacheDir, 'applied', `${name}.json`);
}

function manifestHash(object: KubeObject, fieldManager: string): string {
  return hashOf({ fieldManager, object });
}

function liveHash(live: KubeObject, manifest: KubeObject): string {
  return hashOf(projection(live, manifest));
}

function isRecord(value: unknown): value is AppliedRecord {
  return (
    isPlainObject(value) &&
    typeof value['manifest'] === 'string' &&
    typeof value['live'] === 'string' &&
    typeof value['usedAt'] === 'number'
  );
}
