/** A cluster's namespaces: each with its phase and age, a link to its objects; asked again every few seconds. */
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import type { KubeList, KubeObject } from '../kube/kube-object.ts';
import { usePolled } from '../kube/polled.ts';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { SearchBox } from '../ui/search-box.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { LiveBreadcrumb } from './live-breadcrumb.tsx';
import { liveNamespacePage } from './live-paths.ts';
import './live.css';

export function NamespacesPage() {
  const { cluster = '' } = useParams();
  const namespaces = usePolled<KubeList<KubeObject>>(cluster, '/api/v1/namespaces');
  const [text, setText] = useState('');
  return (
    <>
      <LiveBreadcrumb cluster={cluster} />
      <h1>Namespaces of {cluster}</h1>
      <div className="toolbar">
        <SearchBox value={text} onChange={setText} placeholder="Search namespaces" />
      </div>
      <QueryView query={namespaces} what={`the namespaces of ${cluster}`}>
        {(list) => {
          const shown = list.items
            .filter((namespace) => namespace.metadata.name.includes(text.trim()))
            .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
          return (
            <>
              <h2>
                Namespaces <Count shown={shown.length} total={list.items.length} />
              </h2>
              <table aria-label="Namespaces">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Phase</th>
                    <th>Created</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((namespace) => {
                    const phase = (namespace['status'] as { phase?: string } | undefined)?.phase ?? '—';
                    return (
                      <tr key={namespace.metadata.name} data-namespace={namespace.metadata.name}>
                        <td>
                          <Link to={liveNamespacePage(cluster, namespace.metadata.name)}>{namespace.metadata.name}</Link>
                        </td>
                        <td>{phase === 'Active' ? <span className="tag ok">Active</span> : <span className="tag warn">{phase}</span>}</td>
                        <td>
                          <TimeAgo time={namespace.metadata.creationTimestamp ?? null} />
                        </td>
                      </tr>
                    );
                  })}
                  {shown.length === 0 && <EmptyRow columns={3} />}
                </tbody>
              </table>
            </>
          );
        }}
      </QueryView>
    </>
  );
}
