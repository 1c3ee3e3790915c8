/**
 * `prune` and `delete`, as Kluctl defines them: prune deletes the target's objects that the render no longer
 * produces; delete deletes every object of the target. Both find objects only through the target's discriminator
 * and skip anything the field manager does not own (see ownership.ts), so neither can touch another target's
 * objects.
 */
import type { Cluster } from '../kube/cluster.ts';
import { refOf, type ObjectRef } from '../kube/object.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import { SensitiveValues } from '../project/sensitive.ts';
import { maskedProgress } from '../progress.ts';
import { runDeleteHooks, type ApplyContext } from './apply.ts';
import { orphansOf, renderedKinds, type CommandContext } from './deploy.ts';
import { deleteObjects } from './deletion.ts';
import { deletionBlocker } from './ownership.ts';
import { RemoteObjects } from './remote-objects.ts';
import type { RenderedTarget } from '../target/rendered-target.ts';
import { lockedUnlessDryRun } from './target-lock.ts';
import { collectResult, ResultCollector, type CommandResult } from './result.ts';

export interface DeletionCommandOptions extends CommandContext {
  dryRun: boolean;
  timeoutMs: number;
  /** False: do not wait for the deleted objects to disappear (default true, as `kubectl delete`). */
  wait?: boolean;
  /** Asked with the objects about to be deleted; resolves false to delete nothing. */
  confirm?: (refs: readonly ObjectRef[]) => Promise<boolean>;
}

/**
 * Deletes the target's orphan objects, holding the target's lock unless it is a dry run.
 * @throws Error for a target without a name or discriminator; the signal's reason when it fired before anything was
 *   deleted, PartialResultError (what was deleted until then) after; TargetLockedError when another holder keeps the
 *   target's lock.
 */
export function pruneTarget(target: RenderedTarget, cluster: Cluster, options: DeletionCommandOptions): Promise<CommandResult> {
  return lockedUnlessDryRun('prune', target.target.discriminator, cluster, options, (locked, view) => pruneOrphans(target, view, locked));
}

async function pruneOrphans(target: RenderedTarget, cluster: Cluster, options: DeletionCommandOptions): Promise<CommandResult> {
  const sensitive = new SensitiveValues(target.sensitiveValues);
  const context = { ...options, progress: maskedProgress(options.progress, sensitive) };
  const bound = cluster.withSignal(options.signal);
  const remote = await loadOwned(target, bound, 'prune', context);
  const result = new ResultCollector();
  const orphans = orphansOf(target, remote, options.fieldManager);
  if (orphans.length === 0 || !(await (options.confirm?.(orphans) ?? true))) return result.finish();
  return collectResult(result, sensitive, options.signal, () =>
    deleteObjects(bound, orphans, result, { ...context, dryRun: options.dryRun, timeoutMs: options.timeoutMs }),
  );
}

/**
 * Deletes every object of the target, between its `pre-delete` and `post-delete` hooks (the hooks' own objects
 * are not part of what is deleted: as with Helm, they stay unless their delete policy removes them).
 * @throws as pruneTarget.
 */
export function deleteTarget(target: RenderedTarget, cluster: Cluster, options: DeletionCommandOptions): Promise<CommandResult> {
  return lockedUnlessDryRun('delete', target.target.discriminator, cluster, options, (locked, view) => deleteOwned(target, view, locked));
}

async function deleteOwned(target: RenderedTarget, cluster: Cluster, options: DeletionCommandOptions): Promise<CommandResult> {
  const sensitive = new SensitiveValues(target.sensitiveValues);
  const progress = maskedProgress(options.progress, sensitive);
  const bound = cluster.withSignal(options.signal);
  const remote = await loadOwned(target, bound, 'delete', { ...options, progress });
  const owned = remote.labelled
    .filter((object) => deletionBlocker(object, options.fieldManager, target.inclusion) === undefined)
    .map(refOf);
  const result = new ResultCollector();
  if (owned.length === 0 || !(await (options.confirm?.(owned) ?? true))) return result.finish();
  const hookContext: ApplyContext = {
    cluster: bound,
    fieldManager: options.fieldManager,
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
    signal: options.signal,
  };
  return collectResult(result, sensitive, options.signal, async () => {
    await runDeleteHooks(target.items, 'pre-delete', hookContext);
    if (result.finish().errors.length > 0) return;
    const timeoutMs = Math.max(0, hookContext.deadline - Date.now());
    await deleteObjects(bound, owned, result, { dryRun: options.dryRun, timeoutMs, progress, signal: options.signal });
    await runDeleteHooks(target.items, 'post-delete', hookContext);
  });
}

/**
 * Deletes every object `options.fieldManager` owns that carries `discriminator`, without rendering anything: what
 * the GitOps controller does when a KluctlDeployment with `delete: true` goes (as Kluctl's controller, which keeps
 * the discriminator in the resource's status for this).
 * @throws Error for an empty discriminator; the signal's reason when it fired.
 */
export async function deleteByDiscriminator(
  cluster: Cluster,
  discriminator: string,
  options: DeletionCommandOptions,
): Promise<CommandResult> {
  if (!discriminator) throw new Error('delete needs a discriminator');
  const bound = (options.dryRun ? cluster.dryRun() : cluster).withSignal(options.signal);
  const remote = await RemoteObjects.load(bound, discriminator);
  const owned = remote.labelled.filter((object) => deletionBlocker(object, options.fieldManager, NO_SELECTION) === undefined).map(refOf);
  const result = new ResultCollector();
  await deleteObjects(bound, owned, result, options);
  return result.finish();
}

async function loadOwned(target: RenderedTarget, cluster: Cluster, verb: string, context: CommandContext): Promise<RemoteObjects> {
  if (!target.target.name) {
    throw new Error(`${verb} needs a named target, and the project defines none (no .kluctl.yaml, or one without targets)`);
  }
  if (!target.target.discriminator) {
    throw new Error(`${verb} needs a discriminator to find the target's objects, and the project defines none`);
  }
  context.progress.step('cluster', `reading objects of discriminator '${target.target.discriminator}'`);
  return RemoteObjects.load(cluster, target.target.discriminator, renderedKinds(target));
}
