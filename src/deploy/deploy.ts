/**
 * `deploy` and `diff`: apply the rendered target (for diff: a server-side dry run of the same apply), report new,
 * changed and orphan objects, and with prune delete the orphans. As in Kluctl, diff is a deploy that persists
 * nothing, so what it shows is exactly what deploy would do. The target may have been rendered elsewhere (see
 * src/target/rendered-target.ts); `cluster` is where it is applied.
 */
import type { Cluster } from '../kube/cluster.ts';
import { refKey, refOf, splitApiVersion, type ObjectRef } from '../kube/object.ts';
import { SensitiveValues } from '../project/sensitive.ts';
import { maskedProgress, type Progress } from '../progress.ts';
import { applyItems, type ApplyBehaviour } from './apply.ts';
import type { AppliedObjects } from './applied-objects.ts';
import { deleteObjects } from './deletion.ts';
import { deletionBlocker } from './ownership.ts';
import { RemoteObjects } from './remote-objects.ts';
import type { PendingRender } from '../target/render-and-run.ts';
import { targetObjects, type RenderedTarget } from '../target/rendered-target.ts';
import { lockedUnlessDryRun, type TargetLock } from './target-lock.ts';
import { collectResult, ResultCollector, type CommandResult } from './result.ts';

/** What every command that writes to the cluster is given besides its own options. */
export interface CommandContext {
  /** Field manager of every write; prune and delete only touch objects it manages. */
  fieldManager: string;
  progress: Progress;
  /** Cancels the command: requests are abandoned, waits end, and the signal's reason is thrown. */
  signal?: AbortSignal | undefined;
  /** Who holds the target's lock while the command changes the cluster (see target-lock.ts); default this process, not waiting. */
  lock?: TargetLock | undefined;
}

export interface DeployOptions extends CommandContext {
  dryRun: boolean;
  prune: boolean;
  /**
   * Wait for readiness after each barrier and for pruned objects to disappear. False waits for neither, so an
   * orphan held by a finalizer that this same process must release (an agent pruning a ServiceDeployment whose
   * service it also removes) cannot stall the deploy.
   */
  wait: boolean;
  /** For readiness waits and deletions together, in milliseconds. */
  timeoutMs: number;
  behaviour: ApplyBehaviour;
  /** Asked before orphans are deleted; resolves false to skip the deletion. */
  confirmPrune?: (count: number) => Promise<boolean>;
  /** False: do not look for orphans (drift detection, which reports changes only); default true. */
  orphans?: boolean;
  /** What earlier runs applied, to skip objects unchanged since (see applied-objects.ts); the deploy adds to it. */
  applied?: AppliedObjects | undefined;
}

/**
 * Deploys (or dry-runs) a target, holding its lock unless it is a dry run. A target still rendering is deployed as
 * soon as it is rendered: the lock is taken and the discriminator's objects are read meanwhile (every kind whole,
 * the rendered kinds being unknown yet), and nothing is applied when its render fails.
 * @returns the result, with the values of the target's sensitive vars masked.
 * @throws the render's error, after the lock is released; the signal's reason when it fired before anything was
 *   applied, PartialResultError (what was applied until then) after; TargetLockedError when another holder keeps the
 *   target's lock; errors of single objects are in the result.
 */
export function deployTarget(target: RenderedTarget | PendingRender, cluster: Cluster, options: DeployOptions): Promise<CommandResult> {
  const [pending, wholeKinds]: [PendingRender, ReadonlySet<string> | 'all'] =
    'rendered' in target
      ? [target, 'all']
      : [{ discriminator: target.target.discriminator, rendered: Promise.resolve(target) }, renderedKinds(target)];
  return lockedUnlessDryRun('deploy', pending.discriminator, cluster, options, (locked, view) =>
    applyTarget(pending, wholeKinds, view, locked),
  );
}

async function applyTarget(
  pending: PendingRender,
  wholeKinds: ReadonlySet<string> | 'all',
  cluster: Cluster,
  options: DeployOptions,
): Promise<CommandResult> {
  const bound = cluster.withSignal(options.signal);
  const findOrphans = options.orphans ?? true;
  // A discriminator labels every object it names, so it is no secret: this line needs no masking.
  options.progress.step('cluster', `reading objects of discriminator '${pending.discriminator}'`);
  const [rendered, listed] = await Promise.allSettled([
    pending.rendered,
    RemoteObjects.load(bound, pending.discriminator, wholeKinds, findOrphans),
  ]);
  if (rendered.status === 'rejected') throw rendered.reason;
  if (listed.status === 'rejected') throw listed.reason;
  const target = rendered.value;
  const remote = listed.value;
  const sensitive = new SensitiveValues(target.sensitiveValues);
  const progress = maskedProgress(options.progress, sensitive);
  const result = new ResultCollector();
  const deadline = Date.now() + options.timeoutMs;
  const objects = targetObjects(target);
  return collectResult(result, sensitive, options.signal, async () => {
    await remote.fetchMissing(bound, objects.map(refOf));
    await applyItems(target.items, {
      cluster: bound,
      fieldManager: options.fieldManager,
      dryRun: options.dryRun,
      wait: options.wait,
      deadline,
      options: options.behaviour,
      remote,
      applied: options.applied,
      result,
      progress,
      sensitive,
      signal: options.signal,
    });
    const orphans = findOrphans ? orphansOf(target, remote, options.fieldManager) : [];
    for (const orphan of orphans) result.addOrphan(orphan);
    if (options.prune && orphans.length > 0 && (await (options.confirmPrune?.(orphans.length) ?? true))) {
      const timeoutMs = Math.max(0, deadline - Date.now());
      await deleteObjects(bound, orphans, result, {
        dryRun: options.dryRun,
        wait: options.wait,
        timeoutMs,
        progress,
        signal: options.signal,
      });
    }
  });
}

/** Labelled objects `fieldManager` owns that the render no longer produces. */
export function orphansOf(target: RenderedTarget, remote: RemoteObjects, fieldManager: string): ObjectRef[] {
  const rendered = new Set(targetObjects(target).map((object) => refKey(refOf(object))));
  return remote.labelled
    .filter((object) => !rendered.has(refKey(refOf(object))) && deletionBlocker(object, fieldManager, target.inclusion) === undefined)
    .map(refOf);
}

/** `group/Kind` of every kind the target renders. */
export function renderedKinds(target: RenderedTarget): Set<string> {
  return new Set(targetObjects(target).map((object) => `${splitApiVersion(object.apiVersion).group}/${object.kind}`));
}
