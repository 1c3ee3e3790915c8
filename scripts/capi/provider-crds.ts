/**
 * The CRDs of the test's Cluster API provider (provider.ts): an infrastructure provider (LocalCluster) and a control
 * plane provider (LocalControlPlane) whose control plane is one of this clone's local process clusters
 * (scripts/cluster). They are the test's, not Cluster API's: Cluster API's own controllers (core, built by setup)
 * drive them through the v1beta2 provider contract (docs/book/src/developer/providers/contracts in
 * sigs.k8s.io/cluster-api), which is why each CRD carries the label `cluster.x-k8s.io/v1beta2: v1alpha1`.
 */
import type { KubeObject } from '../../src/kube/object.ts';

export const INFRASTRUCTURE_GROUP = 'infrastructure.local.gantry.dev';
export const CONTROL_PLANE_GROUP = 'controlplane.local.gantry.dev';
export const PROVIDER_VERSION = 'v1alpha1';

/** Every kind this provider defines, with its group. */
export const PROVIDER_KINDS = [
  { group: INFRASTRUCTURE_GROUP, kind: 'LocalCluster', plural: 'localclusters' },
  { group: INFRASTRUCTURE_GROUP, kind: 'LocalClusterTemplate', plural: 'localclustertemplates' },
  { group: CONTROL_PLANE_GROUP, kind: 'LocalControlPlane', plural: 'localcontrolplanes' },
  { group: CONTROL_PLANE_GROUP, kind: 'LocalControlPlaneTemplate', plural: 'localcontrolplanetemplates' },
] as const;

/**
 * The CRDs, with open schemas (the fields the contract reads are documented on the reconcilers): a status
 * subresource for the two kinds that report, and the scale subresource the control plane contract asks for.
 */
export function providerCrds(): KubeObject[] {
  return PROVIDER_KINDS.map(({ group, kind, plural }) => {
    const isTemplate = kind.endsWith('Template');
    const isControlPlane = kind === 'LocalControlPlane';
    return {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: {
        name: `${plural}.${group}`,
        // Cluster API maps its contract version to the CRD version this way (contracts: "All resources: version").
        labels: { 'cluster.x-k8s.io/v1beta2': PROVIDER_VERSION, 'cluster.x-k8s.io/provider': 'local-gantry' },
      },
      spec: {
        group,
        names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
        scope: 'Namespaced',
        versions: [
          {
            name: PROVIDER_VERSION,
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  ...(isTemplate ? {} : { status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }),
                },
              },
            },
            subresources: isTemplate
              ? undefined
              : {
                  status: {},
                  ...(isControlPlane
                    ? {
                        scale: {
                          specReplicasPath: '.spec.replicas',
                          statusReplicasPath: '.status.replicas',
                          labelSelectorPath: '.status.selector',
                        },
                      }
                    : {}),
                },
          },
        ],
      },
    };
  });
}
