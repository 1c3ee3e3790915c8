/**
 * Status bookkeeping of a KluctlDeployment: the result summaries Kluctl keeps in status (lastDeployResult,
 * lastDiffResult, lastValidateResult, lastDriftDetectionResult), each pointing to the full result kept in the results
 * namespace. Conditions and their transition rule are src/kube/conditions.ts.
 */
import type { CommandInfo, DriftResult, ResultSummary } from '../../api/kluctl-deployment.ts';
import type { ObjectRef } from '../../kube/object.ts';
import type { CommandResult } from '../../deploy/result.ts';

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
