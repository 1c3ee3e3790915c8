/** A namespace's objects of one kind: name (a link to the object), state where the kind has one, age; asked again every few seconds. */
import { Link } from 'react-router';
import { type ApiResource, resourcePath } from '../kube/discovery.ts';
import type { KubeList, KubeObject } from '../kube/kube-object.ts';
import { usePolled } from '../kube/polled.ts';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { liveObjectPage } from './live-paths.ts';
import { objectStatus } from './object-status.ts';

export function ObjectsTable({ cluster, namespace, resource }: { cluster: string; namespace: string; resource: ApiResource }) {
  const objects = usePolled<KubeList<KubeObject>>(cluster, resourcePath(resource, namespace));
  return (
    <section aria-label={`${resource.kind} objects`} className="objects">
      <QueryView query={objects} what={`${resource.resource} in ${namespace}`}>
        {(list) => {
          const sorted = [...list.items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
          return (
            <>
              <h2>
                {resource.kind} <Count shown={sorted.length} total={sorted.length} />
              </h2>
              <table>
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>State</th>
                    <th>Created</th>
                  </tr>
                </thead>
                <tbody>
                  {sorted.map((object) => {
                    const status = objectStatus({ ...object, kind: resource.kind });
                    return (
                      <tr key={object.metadata.name} data-object={object.metadata.name}>
                        <td>
                          <Link className="object-name" to={liveObjectPage(cluster, namespace, resource, object.metadata.name)}>
                            {object.metadata.name}
                          </Link>
                        </td>
                        <td>{status ? <StatusBadge {...status} /> : <span className="muted">—</span>}</td>
                        <td>
                          <TimeAgo time={object.metadata.creationTimestamp ?? null} />
                        </td>
                      </tr>
                    );
                  })}
                  {sorted.length === 0 && <EmptyRow columns={3} text={`No ${resource.resource} in ${namespace}.`} />}
                </tbody>
              </table>
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
