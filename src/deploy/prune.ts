/**
 * `prune` and `delete`, as Kluctl defines them: prune deletes the target's objects that the render no longer
 * produces; delete deletes every object of the target. Both find objects only through the target's discriminator
 * and skip anything Gantry does not own (see ownership.ts), so neither can touch another target's objects.
 */
import { refOf, type ObjectRef } from '../kube/object.ts';
import type { Progress } from '../progress.ts';
import { deleteObjects } from './deletion.ts';
import { runDeleteHooks, type ApplyContext } from './apply.ts';
import type { Cluster } from '../kube/cluster.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import { FIELD_MANAGER, findOrphans, requireCluster } from './deploy.ts';
import { deletionBlocker } from './ownership.ts';
import type { PreparedTarget } from './prepare.ts';
import { RemoteObjects } from './remote-objects.ts';
import { ResultCollector, type CommandResult } from './result.ts';

export interface DeletionCommandOptions {
  dryRun: boolean;
  timeoutMs: number;
  /** False: do not wait for the deleted objects to disappear (default true, as `kubectl delete`). */
  wait?: boolean;
  /** Asked with the objects about to be deleted; resolves false to delete nothing. */
  confirm?: (refs: readonly ObjectRef[]) => Promise<boolean>;
}

/** Deletes the target's orphan objects. */
export async function pruneTarget(prepared: PreparedTarget, options: DeletionCommandOptions, progress: Progress): Promise<CommandResult> {
  const remote = await loadOwned(prepared, 'prune', progress);
  return deleteAfterConfirm(prepared, findOrphans(prepared, remote), options, progress);
}

/**
 * Deletes every object of the target, between its `pre-delete` and `post-delete` hooks (the hooks' own objects
 * are not part of what is deleted: as with Helm, they stay unless their delete policy removes them).
 */
export async function deleteTarget(prepared: PreparedTarget, options: DeletionCommandOptions, progress: Progress): Promise<CommandResult> {
  const remote = await loadOwned(prepared, 'delete', progress);
  const owned = remote.labelled.filter((object) => deletionBlocker(object, FIELD_MANAGER, prepared.inclusion) === undefined).map(refOf);
  const result = new ResultCollector();
  if (owned.length === 0 || !(await (options.confirm?.(owned) ?? true))) return result.finish();
  const hookContext: ApplyContext = {
    cluster: requireCluster(prepared),
    fieldManager: FIELD_MANAGER,
    dryRun: options.dryRun,
    wait: true,
    deadline: Date.now() + options.timeoutMs,
    options: {
      forceApply: false,
      replaceOnError: false,
      forceReplaceOnError: false,
      abortOnError: true,
      readinessTimeoutMs: options.timeoutMs,
    },
    remote,
    result,
    progress,
  };
  await runDeleteHooks(prepared.items, 'pre-delete', hookContext);
  if (result.finish().errors.length > 0) return result.finish();
  await deleteObjects(requireCluster(prepared), owned, result, {
    dryRun: options.dryRun,
    timeoutMs: Math.max(0, hookContext.deadline - Date.now()),
    progress,
  });
  await runDeleteHooks(prepared.items, 'post-delete', hookContext);
  return result.finish();
}

/**
 * Deletes every object Gantry owns that carries `discriminator`, without rendering anything: what the GitOps
 * controller does when a KluctlDeployment with `delete: true` goes (as Kluctl's controller, which keeps the
 * discriminator in the resource's status for this).
 */
export async function deleteByDiscriminator(
  cluster: Cluster,
  discriminator: string,
  options: DeletionCommandOptions,
  progress: Progress,
): Promise<CommandResult> {
  if (!discriminator) throw new Error('delete needs a discriminator');
  const remote = await RemoteObjects.load(cluster, discriminator);
  const owned = remote.labelled.filter((object) => deletionBlocker(object, FIELD_MANAGER, NO_SELECTION) === undefined).map(refOf);
  const result = new ResultCollector();
  await deleteObjects(cluster, owned, result, { dryRun: options.dryRun, timeoutMs: options.timeoutMs, wait: options.wait, progress });
  return result.finish();
}

async function loadOwned(prepared: PreparedTarget, verb: string, progress: Progress): Promise<RemoteObjects> {
  if (!prepared.target.name) {
    throw new Error(
      `${verb} needs a named target, and ${prepared.project.file ?? `${prepared.project.dir} (no .kluctl.yaml)`} defines none`,
    );
  }
  if (!prepared.target.discriminator) {
    throw new Error(
      `${verb} needs a discriminator to find the target's objects, and ${prepared.project.file ?? 'the project'} defines none`,
    );
  }
  progress.step('cluster', `reading objects of discriminator '${prepared.target.discriminator}'`);
  return RemoteObjects.load(requireCluster(prepared), prepared.target.discriminator);
}

async function deleteAfterConfirm(
  prepared: PreparedTarget,
  refs: ObjectRef[],
  options: DeletionCommandOptions,
  progress: Progress,
): Promise<CommandResult> {
  const result = new ResultCollector();
  if (refs.length > 0 && (await (options.confirm?.(refs) ?? true))) {
    await deleteObjects(requireCluster(prepared), refs, result, { dryRun: options.dryRun, timeoutMs: options.timeoutMs, progress });
  }
  return result.finish();
}
