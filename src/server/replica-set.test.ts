import { describe, expect, test } from 'vitest';
import { rendezvousOwner } from './replica-set.ts';

const KEYS = Array.from({ length: 600 }, (_, index) => `repository-${index}`);
const REPLICAS = ['replica-a', 'replica-b', 'replica-c'];

function owners(replicas: readonly string[]): Map<string, string | undefined> {
  return new Map(KEYS.map((key) => [key, rendezvousOwner(key, replicas)]));
}

describe('rendezvousOwner', () => {
  test('every replica gets a fair share of the keys, whatever order the replicas are listed in', () => {
    const shares = new Map<string, number>();
    for (const owner of owners(REPLICAS).values()) shares.set(owner!, (shares.get(owner!) ?? 0) + 1);
    for (const replica of REPLICAS) expect(shares.get(replica)).toBeGreaterThan(150);
    expect(owners([...REPLICAS].reverse())).toEqual(owners(REPLICAS));
  });

  test('a replica leaving moves only its own keys, and a replica joining takes keys only for itself', () => {
    const before = owners(REPLICAS);
    const after = owners(REPLICAS.filter((replica) => replica !== 'replica-b'));
    for (const key of KEYS) {
      if (before.get(key) !== 'replica-b') expect(after.get(key)).toBe(before.get(key));
      else expect(after.get(key)).not.toBe('replica-b');
    }
    const joined = owners([...REPLICAS, 'replica-d']);
    for (const key of KEYS) if (joined.get(key) !== 'replica-d') expect(joined.get(key)).toBe(before.get(key));
  });

  test('no replicas, no owner', () => {
    expect(rendezvousOwner('repository-0', [])).toBeUndefined();
  });
});
