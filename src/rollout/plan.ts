/**
 * The pure parts of a progressive rollout (issue 43, part 2): which wave and batch each copy of a global service is
 * in, what a copy's service says about its release (healthy, failed, still going), and why a rollout waits. The
 * server's runner (src/server/rollouts.ts) keeps the state and acts; everything here is a function of its input.
 *
 * Waves are taken in order; a cluster is in the first wave whose `tags` it has all of or whose `clusters` name it, and
 * clusters no wave selects form a last wave, `rest`. Within a wave, copies go in batches of `batchSize`, or of
 * `maxUnavailable` (a count, or a share of the wave rounded down), at least 1; without either, the whole wave at once.
 * Batches are ordered by cluster name, so a plan is the same each time it is made.
 */
import type { CopyState, RolloutSpec } from '../api/rollouts.ts';
import { parseDuration } from '../duration.ts';

export const REST_WAVE = 'rest';
const DEFAULT_PROGRESS_DEADLINE = '10m';

/** One copy of the global service in a rollout. */
export interface RolloutCopy {
  serviceId: string;
  clusterId: string;
  cluster: string;
  service: string;
  wave: number;
  batch: number;
  state: CopyState;
  /** The revision number it ran when the rollout started: a rollback returns to it. */
  from: number;
  reason: string | null;
  releasedAt: string | null;
  /** Set with ROLLED_BACK until the rollback is made: the saved state is acted on after it is saved. */
  rollbackPending?: boolean;
  /**
   * What the copy ran when it was rolled back, when that was not what it ran before: the trackers record it on no copy
   * again (store/rollouts.ts's rolledBackContent).
   */
  rolledBack?: { digest: string | null; chartVersion: string | null };
}

export interface PlannedCluster {
  serviceId: string;
  clusterId: string;
  cluster: string;
  tags: Record<string, string>;
  service: string;
  revision: number;
  /** Who pinned the copy, when someone other than a rollout did: it is left where it is. */
  pinnedBy: string | null;
}

/** The waves' names in order, `rest` last when some cluster is in no wave. */
export function waveNames(spec: RolloutSpec, copies: readonly Pick<RolloutCopy, 'wave'>[]): string[] {
  const names = spec.waves.map((wave) => wave.name);
  return copies.some((copy) => copy.wave === names.length) ? [...names, REST_WAVE] : names;
}

/** Each copy with its wave and batch, WAITING (SKIPPED when someone pinned it). */
export function planCopies(spec: RolloutSpec, clusters: readonly PlannedCluster[]): RolloutCopy[] {
  const waveOf = (cluster: PlannedCluster) => {
    const index = spec.waves.findIndex(
      (wave) =>
        (wave.clusters?.includes(cluster.cluster) ?? false) ||
        (wave.tags !== undefined && Object.entries(wave.tags).every(([key, value]) => cluster.tags[key] === value)),
    );
    return index === -1 ? spec.waves.length : index;
  };
  const byWave = Map.groupBy(clusters, waveOf);
  const copies: RolloutCopy[] = [];
  for (const [wave, members] of [...byWave.entries()].sort(([a], [b]) => a - b)) {
    const size = batchSize(spec, members.length);
    [...members]
      .sort((a, b) => a.cluster.localeCompare(b.cluster))
      .forEach((member, index) =>
        copies.push({
          serviceId: member.serviceId,
          clusterId: member.clusterId,
          cluster: member.cluster,
          service: member.service,
          wave,
          batch: Math.floor(index / size),
          state: member.pinnedBy ? 'SKIPPED' : 'WAITING',
          from: member.revision,
          reason: member.pinnedBy ? `pinned by ${member.pinnedBy}: released only by a user` : null,
          releasedAt: null,
        }),
      );
  }
  return copies;
}

/** How many copies of a wave of `size` go at once. */
export function batchSize(spec: Pick<RolloutSpec, 'batchSize' | 'maxUnavailable'>, size: number): number {
  if (spec.batchSize !== undefined) return spec.batchSize;
  if (spec.maxUnavailable === undefined) return Math.max(size, 1);
  const share = spec.maxUnavailable.endsWith('%')
    ? Math.floor((size * Number(spec.maxUnavailable.slice(0, -1))) / 100)
    : Number(spec.maxUnavailable);
  return Math.max(share, 1);
}

/** What an agent's report says of a released copy. */
export interface CopyFacts {
  /** The service is gone (deleted, or its cluster left the global service). */
  gone: boolean;
  status: string;
  /** The agent applied the current revision. */
  applied: boolean;
  /** The current revision's number. */
  revision: number;
  /** Errors of its last report, one line each. */
  errors: string[];
}

export type CopyOutcome = { state: 'HEALTHY' } | { state: 'FAILED'; reason: string } | { state: 'RELEASED'; deadline: Date };

/**
 * A released copy: HEALTHY once its agent applied the current revision and reports it healthy; FAILED when it reports
 * failed (applying it, or rendering it) or is still not healthy `progressDeadline` after its release; RELEASED (with
 * the deadline) otherwise.
 */
export function copyOutcome(spec: Pick<RolloutSpec, 'progressDeadline'>, copy: RolloutCopy, facts: CopyFacts, now: Date): CopyOutcome {
  if (facts.gone) return { state: 'HEALTHY' };
  if (facts.applied && facts.status === 'healthy') return { state: 'HEALTHY' };
  // A release sets the status stale when it moves the revision, so a failure reported since is the new revision's:
  // applied with a failing object, or not applied at all (a render error).
  if (facts.status === 'failed') {
    const detail = facts.errors.length > 0 ? `: ${facts.errors.join('; ')}` : '';
    return { state: 'FAILED', reason: `revision ${facts.revision} ${facts.applied ? 'failed' : 'did not apply'}${detail}` };
  }
  const limit = spec.progressDeadline ?? DEFAULT_PROGRESS_DEADLINE;
  const deadline = new Date(new Date(copy.releasedAt ?? now.toISOString()).getTime() + parseDuration(limit));
  if (now >= deadline) {
    const where = facts.applied ? `is ${facts.status}` : `has not applied revision ${facts.revision}`;
    return { state: 'FAILED', reason: `not healthy ${limit} after its release: it ${where}` };
  }
  return { state: 'RELEASED', deadline };
}

/** The first bad duration of the spec, or a wave named twice, by field path below `rollout`. */
export function rolloutProblem(spec: RolloutSpec): { field: string; message: string } | undefined {
  for (const field of ['soak', 'interval', 'progressDeadline'] as const) {
    const value = spec[field];
    if (value === undefined) continue;
    try {
      parseDuration(value);
    } catch (error) {
      return { field, message: (error as Error).message };
    }
  }
  const names = spec.waves.map((wave) => wave.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index || name === REST_WAVE);
  if (twice)
    return { field: `waves[${names.lastIndexOf(twice)}].name`, message: `wave ${twice} is named twice (rest is the last wave's own name)` };
  const empty = spec.waves.findIndex((wave) => !wave.tags && !wave.clusters);
  if (empty !== -1) return { field: `waves[${empty}]`, message: 'a wave selects clusters by tags or clusters' };
  return undefined;
}
