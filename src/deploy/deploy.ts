/**
 * `deploy` and `diff`: apply the rendered target (for diff: a server-side dry run of the same apply), report new,
 * changed and orphan objects, and with prune delete the orphans. As in Kluctl, diff is a deploy that persists
 * nothing, so what it shows is exactly what deploy would do.
 */
import { refKey, refOf } from '../kube/object.ts';
import type { Progress } from '../progress.ts';
import { applyItems, type ApplyBehaviour } from './apply.ts';
import { deleteObjects } from './deletion.ts';
import { deletionBlocker } from './ownership.ts';
import type { PreparedTarget } from './prepare.ts';
import { RemoteObjects } from './remote-objects.ts';
import { ResultCollector, type CommandResult } from './result.ts';

/** The field manager Gantry applies with; prune and delete only touch objects it manages. */
export const FIELD_MANAGER = 'gantry';

export interface DeployOptions {
  dryRun: boolean;
  prune: boolean;
  wait: boolean;
  /** For readiness waits and deletions together, in milliseconds. */
  timeoutMs: number;
  behaviour: ApplyBehaviour;
  /** Asked before orphans are deleted; resolves false to skip the deletion. */
  confirmPrune?: (count: number) => Promise<boolean>;
}

/** Deploys (or dry-runs) a prepared target. */
export async function deployTarget(prepared: PreparedTarget, options: DeployOptions, progress: Progress): Promise<CommandResult> {
  const cluster = requireCluster(prepared);
  const result = new ResultCollector();
  const deadline = Date.now() + options.timeoutMs;
  progress.step('cluster', `reading objects of discriminator '${prepared.target.discriminator}'`);
  const remote = await RemoteObjects.load(cluster, prepared.target.discriminator);
  await remote.fetchMissing(cluster, prepared.objects.map(refOf));
  await applyItems(prepared.items, {
    cluster,
    fieldManager: FIELD_MANAGER,
    dryRun: options.dryRun,
    wait: options.wait,
    deadline,
    options: options.behaviour,
    remote,
    result,
    progress,
  });
  const orphans = findOrphans(prepared, remote);
  for (const orphan of orphans) result.addOrphan(orphan);
  if (options.prune && orphans.length > 0 && (await (options.confirmPrune?.(orphans.length) ?? true))) {
    await deleteObjects(cluster, orphans, result, { dryRun: options.dryRun, timeoutMs: Math.max(0, deadline - Date.now()), progress });
  }
  return result.finish();
}

/** Labelled objects Gantry owns that the render no longer produces. */
export function findOrphans(prepared: PreparedTarget, remote: RemoteObjects) {
  const rendered = new Set(prepared.objects.map((object) => refKey(refOf(object))));
  return remote.labelled
    .filter((object) => !rendered.has(refKey(refOf(object))) && deletionBlocker(object, FIELD_MANAGER, prepared.inclusion) === undefined)
    .map(refOf);
}

export function requireCluster(prepared: PreparedTarget) {
  if (!prepared.cluster) throw new Error('this command needs a cluster');
  return prepared.cluster;
}
