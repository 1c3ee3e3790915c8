/**
 * The kinds a namespace's objects may be of, as the cluster's discovery says: the usual workload and
 * configuration kinds first, then every other namespaced kind that can be listed, by name. Events have a tab of
 * their own.
 */
import { Link } from 'react-router';
import { type ApiResource, resourceKey } from '../kube/discovery.ts';
import { liveNamespacePage } from './live-paths.ts';

/** The kinds people look for first, in this order. */
const USUAL = [
  'pods.v1',
  'deployments.v1.apps',
  'statefulsets.v1.apps',
  'daemonsets.v1.apps',
  'replicasets.v1.apps',
  'jobs.v1.batch',
  'cronjobs.v1.batch',
  'services.v1',
  'ingresses.v1.networking.k8s.io',
  'configmaps.v1',
  'secrets.v1',
  'persistentvolumeclaims.v1',
  'serviceaccounts.v1',
  'kluctldeployments.v1beta1.gitops.gantry.dev',
];

export function browsableResources(resources: readonly ApiResource[]): ApiResource[] {
  const listable = resources.filter((resource) => resource.namespaced && resource.verbs.includes('list') && resource.kind !== 'Event');
  const rank = (resource: ApiResource) => {
    const index = USUAL.indexOf(resourceKey(resource));
    return index < 0 ? USUAL.length : index;
  };
  return listable.sort((a, b) => rank(a) - rank(b) || a.kind.localeCompare(b.kind) || a.group.localeCompare(b.group));
}

export function KindList(props: { cluster: string; namespace: string; resources: ApiResource[]; selected: ApiResource }) {
  const usual = props.resources.filter((resource) => USUAL.includes(resourceKey(resource)));
  const others = props.resources.filter((resource) => !USUAL.includes(resourceKey(resource)));
  const item = (resource: ApiResource) => {
    const key = resourceKey(resource);
    const selected = key === resourceKey(props.selected);
    return (
      <li key={key}>
        <Link
          to={liveNamespacePage(props.cluster, props.namespace, { resource })}
          className={selected ? 'active' : undefined}
          aria-current={selected ? 'page' : undefined}
          title={key}
        >
          {resource.kind}
          {resource.group && !usual.includes(resource) && <span className="muted"> {resource.group}</span>}
        </Link>
      </li>
    );
  };
  return (
    <nav className="kind-list" aria-label="Kinds">
      <ul>{usual.map(item)}</ul>
      {others.length > 0 && (
        <details open={others.includes(props.selected)}>
          <summary>More kinds ({others.length})</summary>
          <ul>{others.map(item)}</ul>
        </details>
      )}
    </nav>
  );
}
