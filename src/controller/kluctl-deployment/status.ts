/**
 * Status bookkeeping of a KluctlDeployment: conditions (Ready, Reconciling) with Kubernetes' transition rules, and
 * the result summaries Kluctl keeps in status (lastDeployResult, lastDiffResult, lastValidateResult,
 * lastDriftDetectionResult), each pointing to the full result kept in the results namespace.
 */
import type { Condition } from '../../api/kluctl-deployment.ts';
import type { ObjectRef } from '../../kube/object.ts';
import type { CommandResult } from '../../deploy/result.ts';

/** Sets a condition, keeping lastTransitionTime when the status did not change (metav1 conditions' rule). */
export function withCondition(conditions: readonly Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>): Condition[] {
  const previous = (conditions ?? []).find((condition) => condition.type === next.type);
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : new Date().toISOString();
  return [...(conditions ?? []).filter((condition) => condition.type !== next.type), { ...next, lastTransitionTime }];
}

export interface CommandInfo {
  command: string;
  startTime: string;
  endTime: string;
  target: string;
  discriminator: string;
}

/** What status keeps of a command result (Kluctl's CommandResultSummary, in Gantry's terms). */
export interface ResultSummary {
  id: string;
  commandInfo: CommandInfo;
  objectsHash: string;
  revision: string;
  newObjects: number;
  changedObjects: number;
  deletedObjects: number;
  orphanObjects: number;
  appliedHooks: number;
  errors: string[];
  warnings: string[];
}

export function summarize(
  result: CommandResult,
  info: { id: string; commandInfo: CommandInfo; objectsHash: string; revision: string },
): ResultSummary {
  return {
    ...info,
    newObjects: result.newObjects.length,
    changedObjects: result.changedObjects.length,
    deletedObjects: result.deletedObjects.length,
    orphanObjects: result.orphanObjects.length,
    appliedHooks: result.appliedHooks.length,
    errors: result.errors.map(describe),
    warnings: result.warnings.map(describe),
  };
}

/** What drift detection found: the objects whose live state differs from the render (changed or missing). */
export interface DriftResult {
  id: string;
  commandInfo: CommandInfo;
  objects: ObjectRef[];
  errors: string[];
}

export function driftOf(result: CommandResult, info: { id: string; commandInfo: CommandInfo }): DriftResult {
  const objects = [...result.changedObjects.map(({ diff: _diff, ...ref }) => ref), ...result.newObjects];
  return { ...info, objects, errors: result.errors.map(describe) };
}

export function driftMessage(drift: DriftResult): string {
  if (drift.errors.length > 0) return 'drift detection failed';
  return drift.objects.length === 0 ? 'no drift' : `${drift.objects.length} object(s) drifted`;
}

/** A short sentence about a result, for conditions and events. */
export function resultMessage(command: string, summary: ResultSummary): string {
  const parts = [
    `${summary.newObjects} new`,
    `${summary.changedObjects} changed`,
    `${summary.deletedObjects} deleted`,
    `${summary.orphanObjects} orphan`,
  ];
  const problems =
    summary.errors.length > 0
      ? `, ${summary.errors.length} error(s): ${summary.errors[0]}`
      : summary.warnings.length > 0
        ? `, ${summary.warnings.length} warning(s)`
        : '';
  return `${command}: ${parts.join(', ')} object(s)${problems}`;
}

function describe(message: { object?: ObjectRef; message: string }): string {
  const ref = message.object;
  return ref ? `${ref.namespace ? `${ref.namespace}/` : ''}${ref.kind}/${ref.name}: ${message.message}` : message.message;
}
