import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition, fieldAt, integerAt, stringAt } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of a batch/v1 Job: Ready only once it has finished successfully, as Kluctl waits for Jobs (kstatus
 * instead counts a running Job as current):
 * - Failed when the Failed condition is True (reason BackoffLimitExceeded, DeadlineExceeded, ...);
 * - Ready when the Complete condition is True;
 * - InProgress when spec.suspend is true: a suspended Job runs nothing until it is resumed (by a person or by a
 *   queueing controller such as Kueue), which the message says so that a timeout explains itself;
 * - InProgress while it has not started (no status.startTime) or is running.
 */
export function jobReadiness(job: KubeObject): Readiness {
  const failure = conditionOf(job, 'Failed');
  if (failure?.status === 'True') return failed(describeCondition(failure) || 'Job failed');

  const succeeded = integerAt(job, 'status', 'succeeded') ?? 0;
  if (conditionOf(job, 'Complete')?.status === 'True') return ready(`Complete: ${succeeded} succeeded`);

  if (fieldAt(job, 'spec', 'suspend') === true) {
    return inProgress('suspended (spec.suspend is true): runs nothing until resumed');
  }
  if (stringAt(job, 'status', 'startTime') === undefined) return inProgress('not started yet');

  const completions = integerAt(job, 'spec', 'completions');
  const active = integerAt(job, 'status', 'active') ?? 0;
  const failedPods = integerAt(job, 'status', 'failed') ?? 0;
  const progress = completions === undefined ? `${succeeded}` : `${succeeded} of ${completions}`;
  return inProgress(`running: ${active} active, ${progress} succeeded, ${failedPods} failed`);
}
