/**
 * One object as the cluster has it now, in YAML (asked again every few seconds), with its state where its kind has
 * one, who owns it, and its Events.
 */
import { useParams } from 'react-router';
import { ApiError } from '../../../src/client/fleet-client.ts';
import { parseResourceKey, resourcePath, useApiResources } from '../kube/discovery.ts';
import type { KubeObject } from '../kube/kube-object.ts';
import { ObjectYaml } from '../kube/object-yaml.tsx';
import { usePolled } from '../kube/polled.ts';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { EventsTable } from './events-table.tsx';
import { LiveBreadcrumb } from './live-breadcrumb.tsx';
import { LiveObjectLink } from './live-object-link.tsx';
import { objectStatus } from './object-status.ts';
import './live.css';

export function ObjectPage() {
  const { cluster = '', namespace = '', resource: key = '', name = '' } = useParams();
  const resource = parseResourceKey(key);
  const object = usePolled<KubeObject>(cluster, resourcePath(resource, namespace, name));
  const resources = useApiResources(cluster).data;
  const kind = object.data?.kind ?? kindOf(resources, resource) ?? resource.resource;
  const title = `${kind} ${name}`;
  const status = object.data && objectStatus(object.data);
  return (
    <>
      <LiveBreadcrumb cluster={cluster} namespace={namespace} object={title} />
      <h1>
        {title} {status && <StatusBadge {...status} />}
      </h1>
      {object.isPending && <LoadingPage what={`${kind} ${namespace}/${name}`} />}
      {object.isError &&
        (object.error instanceof ApiError && object.error.status === 404 ? (
          <p className="waiting">
            {kind} {namespace}/{name} does not exist (any more).
          </p>
        ) : (
          <ErrorMessage error={object.error} />
        ))}
      {object.data && (
        <>
          <Owners cluster={cluster} object={object.data} />
          <section aria-label={`Object ${kind} ${namespace}/${name}`}>
            <ObjectYaml object={object.data} label="YAML" />
          </section>
          <h2>Events</h2>
          <EventsTable cluster={cluster} namespace={namespace} involved={{ kind, name }} />
        </>
      )}
    </>
  );
}

function Owners({ cluster, object }: { cluster: string; object: KubeObject }) {
  const owners = (object.metadata.ownerReferences ?? []) as { apiVersion?: string; kind: string; name: string }[];
  if (owners.length === 0) return null;
  return (
    <p className="owners">
      Owned by{' '}
      {owners.map((owner) => (
        <LiveObjectLink key={`${owner.kind}/${owner.name}`} cluster={cluster} object={{ ...owner, namespace: object.metadata.namespace }} />
      ))}
    </p>
  );
}

function kindOf(resources: ReturnType<typeof useApiResources>['data'], resource: ReturnType<typeof parseResourceKey>): string | undefined {
  return resources?.find((candidate) => candidate.group === resource.group && candidate.resource === resource.resource)?.kind;
}
