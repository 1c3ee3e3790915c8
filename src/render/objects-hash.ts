/**
 * The content hash of a rendered target, which the GitOps controller compares to decide whether anything changed
 * (Kluctl's objectsHash): the sha256 of the sorted sha256s of every object's canonical JSON (keys sorted at every
 * level). Sorting makes it independent of item and key order, so only real content changes give a new hash.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/object.ts';
import { hashOf } from '../values.ts';

/** The hash of `objects` described above, as 64 lowercase hex characters; the same for any order of the objects. */
export function objectsHash(objects: readonly KubeObject[]): string {
  const hashes = objects.map(hashOf).sort();
  return sha256(hashes.join('\n'));
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
