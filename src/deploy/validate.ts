/**
 * `validate`: is every rendered object present in the cluster and ready? Each object that is missing or not ready
 * is an error naming it and the reason. Hooks are not checked: they run at deploy or delete time and may be gone
 * by design. With a wait duration, validation repeats until it passes or time is up. A long-running role (controller,
 * agent) takes an object its watched cache has Ready as it is there, and reads only the others.
 */
import type { Cluster } from '../kube/cluster.ts';
import { refKey, refOf, type KubeObject } from '../kube/object.ts';
import { SensitiveValues } from '../project/sensitive.ts';
import type { Progress } from '../progress.ts';
import { tryHookOf } from './hooks.ts';
import { targetObjects, type RenderedTarget } from '../target/rendered-target.ts';
import { maskResult, ResultCollector, type CommandResult } from './result.ts';
import { isWaitedFor, waitForReadiness } from './wait.ts';

export interface ValidateOptions {
  /** How long to keep validating until everything is ready, in ms (0: look once). */
  waitMs: number;
  progress: Progress;
  signal?: AbortSignal | undefined;
}

/** @throws the signal's reason when it fired. */
export async function validateTarget(target: RenderedTarget, cluster: Cluster, options: ValidateOptions): Promise<CommandResult> {
  const refs = targetObjects(target)
    .filter((object) => isWaitedFor(object) && !tryHookOf(object))
    .map(refOf);
  options.progress.step('validate', `checking readiness of ${refs.length} object(s)`);
  const bound = cluster.withSignal(options.signal);
  const notReady = await waitForReadiness(bound, refs, {
    timeoutMs: options.waitMs,
    signal: options.signal,
    known: await watchedObjects(bound, target.target.discriminator),
  });
  const result = new ResultCollector();
  for (const entry of notReady) result.error(`not ready: ${entry.reason}`, entry.ref);
  return maskResult(result.finish(), new SensitiveValues(target.sensitiveValues));
}

/**
 * The target's objects as a long-running role's watched cache holds them (by refKey), so those Ready there are not
 * read one by one; undefined for a command, which has no cache and reads them all.
 */
async function watchedObjects(cluster: Cluster, discriminator: string): Promise<Map<string, KubeObject> | undefined> {
  if (!cluster.labelled || !discriminator) return undefined;
  return new Map((await cluster.labelled.withValue(discriminator)).map((object) => [refKey(refOf(object)), object]));
}
