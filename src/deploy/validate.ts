/**
 * `validate`: is every rendered object present in the cluster and ready? Each object that is missing or not ready
 * is an error naming it and the reason. Hooks are not checked: they run at deploy or delete time and may be gone
 * by design. With a wait duration, validation repeats until it passes or time is up.
 */
import { refOf } from '../kube/object.ts';
import type { Progress } from '../progress.ts';
import { requireCluster } from './deploy.ts';
import type { PreparedTarget } from './prepare.ts';
import { ResultCollector, type CommandResult } from './result.ts';
import { isWaitedFor, waitForReadiness } from './wait.ts';
import { tryHookOf } from './hooks.ts';

export async function validateTarget(prepared: PreparedTarget, options: { waitMs: number }, progress: Progress): Promise<CommandResult> {
  const refs = prepared.objects.filter((object) => isWaitedFor(object) && !tryHookOf(object)).map(refOf);
  progress.step('validate', `checking readiness of ${refs.length} object(s)`);
  const notReady = await waitForReadiness(requireCluster(prepared), refs, { timeoutMs: options.waitMs });
  const result = new ResultCollector();
  for (const entry of notReady) result.error(`not ready: ${entry.reason}`, entry.ref);
  return result.finish();
}
