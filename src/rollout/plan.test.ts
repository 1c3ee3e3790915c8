/**
 * The pure parts of a rollout: waves by tags or names with the rest last, batches by size or share, copies someone
 * pinned skipped, a released copy's outcome from its service, and the problems of a spec.
 */
import { describe, expect, test } from 'vitest';
import type { RolloutSpec } from '../api/rollouts.ts';
import { batchSize, copyOutcome, type PlannedCluster, planCopies, type RolloutCopy, rolloutProblem, waveNames } from './plan.ts';

const spec: RolloutSpec = {
  waves: [
    { name: 'canary', clusters: ['edge-1'] },
    { name: 'eu', tags: { region: 'eu' } },
  ],
  soak: '5m',
  onFailure: 'rollback',
};

const cluster = (name: string, tags: Record<string, string> = {}, pinnedBy: string | null = null): PlannedCluster => ({
  serviceId: `svc-${name}`,
  clusterId: `id-${name}`,
  cluster: name,
  tags,
  service: 'web',
  revision: 3,
  pinnedBy,
});

describe('planCopies', () => {
  test('a cluster is in the first wave naming it or whose tags it has; the rest form a last wave', () => {
    const copies = planCopies(spec, [
      cluster('us-1', { region: 'us' }),
      cluster('eu-2', { region: 'eu' }),
      cluster('edge-1', { region: 'eu' }),
      cluster('eu-1', { region: 'eu' }),
    ]);
    const byCluster = Object.fromEntries(copies.map((copy) => [copy.cluster, copy]));
    expect(byCluster['edge-1']).toMatchObject({ wave: 0, batch: 0, state: 'WAITING', from: 3 });
    expect(byCluster['eu-1']).toMatchObject({ wave: 1 });
    expect(byCluster['eu-2']).toMatchObject({ wave: 1 });
    expect(byCluster['us-1']).toMatchObject({ wave: 2 });
    expect(waveNames(spec, copies)).toEqual(['canary', 'eu', 'rest']);
    expect(
      waveNames(
        spec,
        copies.filter((copy) => copy.wave < 2),
      ),
    ).toEqual(['canary', 'eu']);
  });

  test('within a wave, batches of batchSize (or maxUnavailable) in cluster name order', () => {
    const clusters = ['eu-3', 'eu-1', 'eu-4', 'eu-2', 'eu-5'].map((name) => cluster(name, { region: 'eu' }));
    const batches = (rollout: RolloutSpec) => Object.fromEntries(planCopies(rollout, clusters).map((copy) => [copy.cluster, copy.batch]));
    expect(batches({ ...spec, batchSize: 2 })).toEqual({ 'eu-1': 0, 'eu-2': 0, 'eu-3': 1, 'eu-4': 1, 'eu-5': 2 });
    expect(batches({ ...spec, maxUnavailable: '40%' })).toEqual({ 'eu-1': 0, 'eu-2': 0, 'eu-3': 1, 'eu-4': 1, 'eu-5': 2 });
    expect(batches(spec)).toEqual({ 'eu-1': 0, 'eu-2': 0, 'eu-3': 0, 'eu-4': 0, 'eu-5': 0 });
  });

  test('a copy someone pinned is skipped and says by whom', () => {
    const [copy] = planCopies(spec, [cluster('edge-1', {}, 'alice')]);
    expect(copy).toMatchObject({ state: 'SKIPPED', reason: 'pinned by alice: released only by a user' });
  });
});

test('batchSize: batchSize wins, a share rounds down to at least 1, a count is taken as is', () => {
  expect(batchSize({ batchSize: 3, maxUnavailable: '50%' }, 10)).toBe(3);
  expect(batchSize({ maxUnavailable: '25%' }, 10)).toBe(2);
  expect(batchSize({ maxUnavailable: '10%' }, 3)).toBe(1);
  expect(batchSize({ maxUnavailable: '4' }, 10)).toBe(4);
  expect(batchSize({}, 7)).toBe(7);
  expect(batchSize({}, 0)).toBe(1);
});

describe('copyOutcome', () => {
  const released: RolloutCopy = { ...planCopies(spec, [cluster('edge-1')])[0]!, state: 'RELEASED', releasedAt: '2026-11-29T10:00:00.000Z' };
  const at = (time: string) => new Date(`2026-11-29T${time}Z`);
  const facts = { gone: false, status: 'healthy', applied: true, revision: 4, errors: [] };

  test('healthy once its agent applied the revision and reports healthy; gone counts as done', () => {
    expect(copyOutcome(spec, released, facts, at('10:01:00'))).toEqual({ state: 'HEALTHY' });
    expect(copyOutcome(spec, released, { ...facts, gone: true }, at('10:01:00'))).toEqual({ state: 'HEALTHY' });
  });

  test('failed when it reports failed at the new revision, with its errors', () => {
    expect(copyOutcome(spec, released, { ...facts, status: 'failed', errors: ['apply: ConfigMap web: invalid'] }, at('10:01:00'))).toEqual({
      state: 'FAILED',
      reason: 'revision 4 failed: apply: ConfigMap web: invalid',
    });
  });

  test('a render error fails it too; still going, it has until the deadline, and past it it fails', () => {
    expect(copyOutcome(spec, released, { ...facts, status: 'failed', applied: false, errors: ['render: bad'] }, at('10:01:00'))).toEqual({
      state: 'FAILED',
      reason: 'revision 4 did not apply: render: bad',
    });
    expect(copyOutcome(spec, released, { ...facts, status: 'stale', applied: false }, at('10:09:59'))).toEqual({
      state: 'RELEASED',
      deadline: at('10:10:00'),
    });
    expect(copyOutcome({ progressDeadline: '2m' }, released, { ...facts, status: 'stale', applied: false }, at('10:02:00'))).toEqual({
      state: 'FAILED',
      reason: 'not healthy 2m after its release: it has not applied revision 4',
    });
    expect(copyOutcome(spec, released, { ...facts, status: 'synced' }, at('10:10:00'))).toEqual({
      state: 'FAILED',
      reason: 'not healthy 10m after its release: it is synced',
    });
  });
});

test('rolloutProblem names the field: a bad duration, a wave named twice or rest, a wave selecting nothing', () => {
  expect(rolloutProblem(spec)).toBeUndefined();
  expect(rolloutProblem({ ...spec, soak: 'soon' })).toMatchObject({
    field: 'soak',
    message: expect.stringMatching(/invalid duration 'soon'/),
  });
  expect(rolloutProblem({ ...spec, progressDeadline: '1 day' })).toMatchObject({ field: 'progressDeadline' });
  expect(rolloutProblem({ ...spec, waves: [...spec.waves, { name: 'canary', tags: { a: 'b' } }] })).toMatchObject({
    field: 'waves[2].name',
  });
  expect(rolloutProblem({ ...spec, waves: [{ name: 'rest', tags: { a: 'b' } }] })).toMatchObject({ field: 'waves[0].name' });
  expect(rolloutProblem({ ...spec, waves: [{ name: 'empty' }] })).toEqual({
    field: 'waves[0]',
    message: 'a wave selects clusters by tags or clusters',
  });
});
