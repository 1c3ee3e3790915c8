/**
 * Whether a kind is namespaced. The API server's discovery is the authority (see Discovery), with CRDs in the same
 * render telling their own scope; the built-in table below is what kustomize's namespace transformer knows, for
 * the native kustomize path, which must treat kinds exactly as kustomize does.
 */
import type { KubeObject } from './object.ts';
import { splitApiVersion } from './object.ts';

/** Answers `isNamespaced` for a group and kind, or undefined when it does not know the kind. */
export interface ScopeResolver {
  isNamespaced(group: string, kind: string): boolean | undefined;
}

const CLUSTER_SCOPED = new Set([
  '/Namespace',
  '/Node',
  '/PersistentVolume',
  '/ComponentStatus',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'storage.k8s.io/VolumeAttributesClass',
  'scheduling.k8s.io/PriorityClass',
  'node.k8s.io/RuntimeClass',
  'networking.k8s.io/IngressClass',
  'networking.k8s.io/IPAddress',
  'networking.k8s.io/ServiceCIDR',
  'certificates.k8s.io/CertificateSigningRequest',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
  'resource.k8s.io/DeviceClass',
  'resource.k8s.io/ResourceSlice',
]);

/** True for built-in kinds that are cluster-scoped, whatever the cluster. */
export function isKnownClusterScoped(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return CLUSTER_SCOPED.has(`${splitApiVersion(object.apiVersion).group}/${object.kind}`);
}

/** Adds the scopes that CRDs in `objects` declare in front of `fallback` (a CRD and its resources in one render). */
export function withCrdScopes(objects: readonly KubeObject[], fallback: ScopeResolver): ScopeResolver {
  const declared = new Map<string, boolean>();
  for (const object of objects) {
    if (object.kind !== 'CustomResourceDefinition' || splitApiVersion(object.apiVersion).group !== 'apiextensions.k8s.io') continue;
    const spec = object['spec'] as { group?: string; scope?: string; names?: { kind?: string } } | undefined;
    if (spec?.group && spec.names?.kind && spec.scope) declared.set(`${spec.group}/${spec.names.kind}`, spec.scope === 'Namespaced');
  }
  return { isNamespaced: (group, kind) => declared.get(`${group}/${kind}`) ?? fallback.isNamespaced(group, kind) };
}
