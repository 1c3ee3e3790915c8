import type { KubeObject } from '../../src/kube/object.ts';

/**
 * The default StorageClass, served by kube-controller-manager's in-tree hostPath provisioner
 * (`--enable-hostpath-provisioner`, meant for development clusters). Without it every PersistentVolumeClaim stays
 * Pending and no StatefulSet with volume claim templates (e.g. Helm's redis) ever becomes ready, unlike on a real
 * cluster. The volumes are empty folders under /tmp/hostpath_pv, removed when their claims are deleted.
 */
export function defaultStorageClass(): KubeObject {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'standard', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'kubernetes.io/host-path',
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  };
}
