/**
 * A ClusterClass of the test's local provider (provider.ts), with its two templates: a Cluster of this class gets a
 * LocalCluster and a LocalControlPlane, that is one more local process cluster, and no workers.
 */
import type { KubeObject } from '../../src/kube/object.ts';
import { CONTROL_PLANE_GROUP, INFRASTRUCTURE_GROUP, PROVIDER_VERSION } from './provider-crds.ts';

/** The templates, then the ClusterClass, all named `name` in `namespace`. */
export function localClusterClass(namespace: string, name = 'local'): KubeObject[] {
  const infrastructure = { apiVersion: `${INFRASTRUCTURE_GROUP}/${PROVIDER_VERSION}`, kind: 'LocalClusterTemplate', name };
  const controlPlane = { apiVersion: `${CONTROL_PLANE_GROUP}/${PROVIDER_VERSION}`, kind: 'LocalControlPlaneTemplate', name };
  const template = ({ apiVersion, kind }: { apiVersion: string; kind: string }): KubeObject => ({
    apiVersion,
    kind,
    metadata: { name, namespace },
    spec: { template: { spec: {} } },
  });
  return [
    template(infrastructure),
    template(controlPlane),
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'ClusterClass',
      metadata: { name, namespace },
      spec: { infrastructure: { templateRef: infrastructure }, controlPlane: { templateRef: controlPlane } },
    },
  ];
}
