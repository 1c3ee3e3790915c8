/** Kubernetes objects and lists as the API server sends them, with what every page reads of them. */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: unknown[];
  ownerReferences?: { kind: string; name: string }[];
}

export type KubeObject = Record<string, unknown> & { apiVersion?: string; kind?: string; metadata: ObjectMeta };

export interface KubeList<T> {
  metadata: { resourceVersion?: string };
  items: T[];
}

/** `namespace/name`, or `name` for cluster-scoped objects: unique within a list of one kind. */
export function objectKey(object: { metadata: ObjectMeta }): string {
  return object.metadata.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata.name;
}
