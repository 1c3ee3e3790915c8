import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition, integerAt, listAt, stringAt } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of a v1 Pod, by status.phase and the Ready condition (kstatus and argo gitops-engine read it so):
 * - Succeeded: Ready, the pod ran to completion;
 * - Failed: Failed, quoting status.reason/message (e.g. Evicted) or the first container that exited non-zero;
 * - Running: Ready when the Ready condition is True, else InProgress quoting waiting containers (CrashLoopBackOff, ...)
 *   or the Ready condition;
 * - Pending: InProgress, quoting the PodScheduled condition when the pod is not scheduled (Unschedulable,
 *   SchedulingGated), else waiting containers (ImagePullBackOff, CreateContainerConfigError, ...);
 * - no phase yet, or Unknown (node unreachable): InProgress.
 * Crash loops and image pull errors stay InProgress rather than Failed: the kubelet keeps retrying and they often end
 * by themselves (a dependency comes up, an image gets pushed). kstatus marks only CrashLoopBackOff as Failed; argo
 * marks these Degraded for restartPolicy Always.
 */
export function podReadiness(pod: KubeObject): Readiness {
  const phase = stringAt(pod, 'status', 'phase');
  switch (phase) {
    case 'Succeeded':
      return ready('Succeeded');
    case 'Failed':
      return failed(`Failed: ${failureReason(pod)}`);
    case 'Running': {
      const readyCondition = conditionOf(pod, 'Ready');
      if (readyCondition?.status === 'True') return ready('Running and ready');
      const why = containerProblems(pod) ?? (readyCondition ? describeCondition(readyCondition) : 'no Ready condition yet');
      return inProgress(`Running, not ready: ${why}`);
    }
    case 'Pending': {
      const scheduled = conditionOf(pod, 'PodScheduled');
      if (scheduled?.status === 'False') return inProgress(`Pending: not scheduled: ${describeCondition(scheduled)}`);
      return inProgress(`Pending: ${containerProblems(pod) ?? 'waiting for containers to start'}`);
    }
    case undefined:
      return inProgress('waiting to be scheduled');
    default:
      return inProgress([phase, stringAt(pod, 'status', 'message')].filter(Boolean).join(': '));
  }
}

/** Why a Failed pod failed: the pod-level reason (eviction, deadline) or else the first container that exited non-zero. */
function failureReason(pod: KubeObject): string {
  const podLevel = [stringAt(pod, 'status', 'reason'), stringAt(pod, 'status', 'message')].filter(Boolean).join(': ');
  if (podLevel) return podLevel;
  for (const container of containerStatuses(pod)) {
    const exitCode = integerAt(container, 'state', 'terminated', 'exitCode') ?? 0;
    if (exitCode !== 0) {
      const reason = stringAt(container, 'state', 'terminated', 'reason');
      return `container "${stringAt(container, 'name')}" exited with code ${exitCode}${reason ? ` (${reason})` : ''}`;
    }
  }
  return 'no reason given';
}

/** The normal steps of starting a container; any other waiting reason is worth reporting. */
const startingReasons = new Set(['ContainerCreating', 'PodInitializing']);

/** `container "x" Reason: message` for each container that waits for something other than its normal start. */
function containerProblems(pod: KubeObject): string | undefined {
  const problems = containerStatuses(pod).flatMap((container) => {
    const reason = stringAt(container, 'state', 'waiting', 'reason');
    if (reason === undefined || startingReasons.has(reason)) return [];
    const message = stringAt(container, 'state', 'waiting', 'message');
    return [`container "${stringAt(container, 'name')}" ${reason}${message ? `: ${message}` : ''}`];
  });
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** Init containers first: while one of them waits, the app containers cannot start. */
function containerStatuses(pod: KubeObject): unknown[] {
  return [...listAt(pod, 'status', 'initContainerStatuses'), ...listAt(pod, 'status', 'containerStatuses')];
}
