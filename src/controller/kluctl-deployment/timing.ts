/**
 * When a KluctlDeployment is due, as Kluctl's controller computes it: the next reconcile at `interval`, sooner when
 * a periodic deploy (`deployInterval`) or validation (`validateInterval`, default `interval`) falls due first;
 * `retryInterval` (default `interval`) after a failure; a reconcile may take `timeout` (default `deployInterval`, else
 * `interval`, at least 30 seconds). Suspended deployments have no periodic work.
 */
import type { KluctlDeployment, KluctlDeploymentSpec } from '../../api/kluctl-deployment.ts';
import { parseDuration } from '../../duration.ts';

const MIN_TIMEOUT_MS = 30_000;

export function intervalMs(spec: KluctlDeploymentSpec): number {
  return parseDuration(spec.interval);
}

export function retryIntervalMs(spec: KluctlDeploymentSpec): number {
  return spec.retryInterval ? parseDuration(spec.retryInterval) : intervalMs(spec);
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
  return end === undefined ? undefined : end + parseDuration(spec.deployInterval);
}

/** Epoch ms of the next periodic validation, or undefined when there is none. */
export function nextValidateAt(deployment: KluctlDeployment): number | undefined {
  const { spec, status } = deployment;
  if (spec.suspend || spec.validate === false || spec.validateInterval === 'never') return undefined;
  const end = endTimeOf(status?.lastValidateResult);
  return end === undefined ? undefined : end + parseDuration(spec.validateInterval ?? spec.interval);
}

/** Milliseconds until the deployment should be reconciled again (0 = now). */
export function nextReconcileIn(deployment: KluctlDeployment, now: number): number {
  const candidates = [now + intervalMs(deployment.spec), nextDeployAt(deployment), nextValidateAt(deployment)].filter(
    (time): time is number => time !== undefined,
  );
  return Math.max(0, Math.min(...candidates) - now);
}

function endTimeOf(summary: unknown): number | undefined {
  const end = (summary as { commandInfo?: { endTime?: string } } | undefined)?.commandInfo?.endTime;
  return end ? Date.parse(end) : undefined;
}
