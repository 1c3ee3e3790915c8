/** An object named by apiVersion, kind, namespace and name (an event's, an owner's): a link to its Live page when the cluster serves its kind. */
import { Link } from 'react-router';
import { findResource, useApiResources } from '../kube/discovery.ts';
import { liveObjectPage } from './live-paths.ts';

export function LiveObjectLink(props: {
  cluster: string;
  object: { apiVersion?: string; kind?: string; name?: string; namespace?: string };
}) {
  const { apiVersion = '', kind = '', name = '', namespace } = props.object;
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const resources = useApiResources(props.cluster).data;
  const resource = resources && findResource(resources, group, kind);
  const text = `${kind}/${name}`;
  if (!resource || !namespace || !resource.namespaced) return <span className="object-name">{text}</span>;
  return (
    <Link className="object-name" to={liveObjectPage(props.cluster, namespace, resource, name)}>
      {text}
    </Link>
  );
}
