/**
 * When a KluctlDeployment is due, as Kluctl's controller computes it: the next reconcile at `interval`, sooner when
 * a periodic deploy (`deployInterval`) or validation (`validateInterval`, default `interval`) falls due first;
 * `retryInterval` (default `interval`) after a failure; a reconcile may take `timeout` (default `deployInterval`, else
 * `interval`, at least 30 seconds). Suspended deployments have no periodic work. A zero interval schedules nothing, as
 * controller-runtime treats a zero RequeueAfter: a zero `interval` reconciles only on changes, a zero `retryInterval`
 * leaves retries to the work queue's backoff.
 */
import type { KluctlDeployment, KluctlDeploymentSpec, ResultSummary } from '../../api/kluctl-deployment.ts';
import { parseDuration } from '../../duration.ts';

const MIN_TIMEOUT_MS = 30_000;

/** The reconcile interval in ms; undefined when zero (no periodic reconcile). */
export function intervalMs(spec: KluctlDeploymentSpec): number | undefined {
  return parseDuration(spec.interval) || undefined;
}

/** How long after a failure to retry, in ms; undefined when zero (the work queue's backoff decides). */
export function retryIntervalMs(spec: KluctlDeploymentSpec): number | undefined {
  return spec.retryInterval ? parseDuration(spec.retryInterval) || undefined : intervalMs(spec);
}

export function timeoutMs(spec: KluctlDeploymentSpec): number {
  const configured = spec.timeout ?? (spec.deployInterval && spec.deployInterval !== 'never' ? spec.deployInterval : spec.interval);
  return Math.max(MIN_TIMEOUT_MS, parseDuration(configured));
}

/** Epoch ms of the next forced deploy, or undefined when there is none. */
export function nextDeployAt(deployment: KluctlDeployment): number | undefined {
  const { spec, status } = deployment;
  if (spec.suspend || !spec.deployInterval || spec.deployInterval === 'never') return undefined;
  const end = endTimeOf(status?.lastDeployResult);
  const interval = parseDuration(spec.deployInterval);
  return end === undefined || interval === 0 ? undefined : end + interval;
}

/** Epoch ms of the next periodic validation, or undefined when there is none. */
export function nextValidateAt(deployment: KluctlDeployment): number | undefined {
  const { spec, status } = deployment;
  if (spec.suspend || spec.validate === false || spec.validateInterval === 'never') return undefined;
  const end = endTimeOf(status?.lastValidateResult);
  const interval = parseDuration(spec.validateInterval ?? spec.interval);
  return end === undefined || interval === 0 ? undefined : end + interval;
}

/** Milliseconds until the deployment should be reconciled again (0 = now); undefined when nothing is scheduled. */
export function nextReconcileIn(deployment: KluctlDeployment, now: number): number | undefined {
  const interval = intervalMs(deployment.spec);
  const candidates = [interval === undefined ? undefined : now + interval, nextDeployAt(deployment), nextValidateAt(deployment)].filter(
    (time): time is number => time !== undefined,
  );
  return candidates.length === 0 ? undefined : Math.max(0, Math.min(...candidates) - now);
}

function endTimeOf(summary: ResultSummary | undefined): number | undefined {
  return summary ? Date.parse(summary.commandInfo.endTime) : undefined;
}
