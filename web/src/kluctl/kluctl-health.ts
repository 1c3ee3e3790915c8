/**
 * A KluctlDeployment's health in the UI's four words, from what its controller says: Ready (Kluctl's condition,
 * from the last deploy and validation), Reconciling while a reconcile runs, and spec.suspend. Manual approval is
 * read the controller's way: with spec.manual, the objects it rendered last (status.lastObjectsHash) are deployed
 * only once spec.manualObjectsHash names them.
 */
import type { Condition } from '../../../src/api/kluctl-deployment.ts';
import type { HealthView } from '../health.ts';
import type { KluctlDeployment } from './kluctl-resource.ts';

export function condition(deployment: KluctlDeployment, type: 'Ready' | 'Reconciling'): Condition | undefined {
  return deployment.status?.conditions?.find((candidate) => candidate.type === type);
}

export function kluctlHealth(deployment: KluctlDeployment): HealthView {
  const ready = condition(deployment, 'Ready');
  const reconciling = condition(deployment, 'Reconciling');
  if (deployment.metadata.deletionTimestamp)
    return { health: 'Progressing', label: 'Deleting', detail: "the controller is deleting the target's objects" };
  if (reconciling?.status === 'True') return { health: 'Progressing', label: 'Reconciling', detail: reconciling.message };
  if (deployment.spec.suspend)
    return { health: 'Unknown', label: 'Suspended', detail: 'spec.suspend: nothing is reconciled until resumed' };
  const approval = awaitingApproval(deployment);
  if (approval && ready?.status !== 'True')
    return { health: 'Unknown', label: 'Awaiting approval', detail: `spec.manual: the objects hash ${approval} waits for approval` };
  if (!ready) return { health: 'Unknown', label: 'Not reconciled', detail: 'the controller has not reconciled it yet' };
  if (ready.status === 'True') return { health: 'Healthy', detail: ready.message };
  if (ready.status === 'False') return { health: 'Degraded', detail: `${ready.reason}: ${ready.message}` };
  return { health: 'Unknown', detail: ready.message };
}

/** The rendered objects' hash waiting for approval, when spec.manual holds back a deploy. */
export function awaitingApproval(deployment: KluctlDeployment): string | undefined {
  const hash = deployment.status?.lastObjectsHash;
  if (!deployment.spec.manual || !hash || deployment.spec.manualObjectsHash === hash) return undefined;
  return hash;
}

/** The spec changed (suspend, an approval) and the controller has not reconciled that generation yet. */
export function specPending(deployment: KluctlDeployment): boolean {
  return (deployment.status?.observedGeneration ?? 0) < (deployment.metadata.generation ?? 0);
}
