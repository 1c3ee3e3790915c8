import type { KubeObject } from '../kube/object.ts';
import { stringAt } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of a v1 PersistentVolumeClaim, by status.phase (kstatus, argo gitops-engine and Kluctl all wait for Bound):
 * - Bound: Ready;
 * - Lost: Failed, its PersistentVolume is gone (argo: Degraded);
 * - Pending or no phase yet: InProgress, saying what the claim waits for as far as the claim itself tells:
 *   spec.volumeName names a volume it is being bound to; the `volume.kubernetes.io/storage-provisioner` annotation
 *   (or its `volume.beta.` predecessor), which the PV controller sets when it hands the claim to a provisioner, names
 *   the provisioner; without either, no volume matches yet, which with a WaitForFirstConsumer storage class lasts
 *   until a pod uses the claim (the binding mode is on the StorageClass, so the message names both possibilities).
 */
export function pvcReadiness(claim: KubeObject): Readiness {
  const phase = stringAt(claim, 'status', 'phase');
  const volume = stringAt(claim, 'spec', 'volumeName');
  if (phase === 'Bound') return ready(`Bound to ${volume ?? 'a volume'}`);
  if (phase === 'Lost') return failed(`Lost: PersistentVolume ${volume ?? '(unnamed)'} no longer exists`);
  return inProgress(`${phase ?? 'Pending'}: ${pendingReason(claim)}`);
}

function pendingReason(claim: KubeObject): string {
  const volume = stringAt(claim, 'spec', 'volumeName');
  if (volume) return `waiting to be bound to PersistentVolume ${volume}`;
  const annotations = claim.metadata.annotations ?? {};
  const provisioner =
    annotations['volume.kubernetes.io/storage-provisioner'] ?? annotations['volume.beta.kubernetes.io/storage-provisioner'];
  if (provisioner) return `waiting for a volume to be provisioned by ${provisioner}`;
  return 'no matching PersistentVolume yet, or waiting for a first consumer pod (WaitForFirstConsumer storage class)';
}
