/**
 * An object a command result names, as `namespace/Kind/name`: a link to its Live page when it is namespaced and
 * the cluster serves its kind (a deleted object's page says it is gone).
 */
import { Link } from 'react-router';
import { findResource, useApiResources } from '../kube/discovery.ts';
import { liveObjectPage } from '../live/live-paths.ts';
import type { ObjectRef } from './kluctl-resource.ts';

export function ObjectRefLink({ cluster, object }: { cluster: string; object: ObjectRef }) {
  const resources = useApiResources(cluster).data;
  const resource = resources && findResource(resources, object.group, object.kind);
  const text = refText(object);
  if (!resource || !object.namespace) return <span className="object-name">{text}</span>;
  return (
    <Link className="object-name" to={liveObjectPage(cluster, object.namespace, resource, object.name)}>
      {text}
    </Link>
  );
}

export function refText(object: ObjectRef): string {
  return `${object.namespace ? `${object.namespace}/` : ''}${object.kind}/${object.name}`;
}
