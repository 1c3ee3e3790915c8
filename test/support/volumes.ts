/**
 * A PersistentVolumeClaim that stays Pending (its storage class has no provisioner) until the test binds it: the
 * object a deploy can be made to wait for, and then let go of, at a moment the test chooses.
 */

/** Runs kubectl against the test's cluster and gives its stdout. */
export type Kubectl = (args: readonly string[], input?: string) => Promise<string>;

/** The claim named `claim` in `namespace`, of `storageClass` (which no provisioner serves), as YAML. */
export function pendingClaim(namespace: string, storageClass: string): string {
  return (
    `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: claim\n  namespace: ${namespace}\n` +
    `spec:\n  storageClassName: ${storageClass}\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n`
  );
}

/**
 * Binds `namespace`'s pendingClaim to a volume named `volume` made for it, doing all of the PersistentVolume
 * controller's part (the volume's claimRef, the claim's volumeName and its Bound phase) at once. Left to
 * kube-controller-manager, a claim pre-bound by its volume's claimRef waits for the binder's periodic resync of
 * claims (15 s), and after an API server restart the binder took up to a minute to recover: that, not Gantry, would
 * decide how long a test waits. The binder, when it syncs the claim, completes the pair (the claim's UID in the
 * claimRef) and keeps it Bound.
 */
export async function bindClaim(kubectl: Kubectl, options: { namespace: string; storageClass: string; volume: string }): Promise<void> {
  const { namespace, storageClass, volume } = options;
  const persistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: volume },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: storageClass,
      hostPath: { path: `/tmp/${volume}` },
      claimRef: { namespace, name: 'claim' },
    },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify(persistentVolume));
  await kubectl(['patch', 'pvc', 'claim', '-n', namespace, '--type=merge', '-p', JSON.stringify({ spec: { volumeName: volume } })]);
  const bound = { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } };
  await kubectl(['patch', 'pvc', 'claim', '-n', namespace, '--subresource=status', '--type=merge', '-p', JSON.stringify(bound)]);
}
