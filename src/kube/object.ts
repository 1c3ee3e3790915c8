/**
 * The shape every Kubernetes object has, as Gantry handles it: plain JSON, never a typed model, so that no field
 * is dropped on its way to the API server.
 */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
  managedFields?: Array<{ manager?: string; operation?: string; apiVersion?: string; fieldsV1?: unknown }>;
  finalizers?: string[];
  [field: string]: unknown;
}

/** Metadata of a namespaced object read from the API server, where name and namespace are always set. */
export type NamespacedObjectMeta = ObjectMeta & { name: string; namespace: string };

/** Identifies one object: group ('' for the core group), version, kind, namespace ('' when cluster-scoped), name. */
export interface ObjectRef {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
}

/** A core v1 Secret: its values are never shown, recorded or kept. */
export function isSecret(object: KubeObject): boolean {
  return object.kind === 'Secret' && object.apiVersion === 'v1';
}

/** Splits an apiVersion such as `apps/v1` or `v1` into group and version ('' for the core group). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The ref of `object`; an unset namespace or name (a cluster-scoped object, a generateName) gives ''. */
export function refOf(object: KubeObject): ObjectRef {
  const { group, version } = splitApiVersion(object.apiVersion);
  return { group, version, kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name ?? '' };
}

/** Formats a ref the way Kluctl prints it: `namespace/Kind/name`, or `Kind/name` when cluster-scoped. */
export function formatRef(ref: ObjectRef): string {
  return ref.namespace ? `${ref.namespace}/${ref.kind}/${ref.name}` : `${ref.kind}/${ref.name}`;
}

/** A key that is equal for two refs to the same object, whatever their version. */
export function refKey(ref: ObjectRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}
