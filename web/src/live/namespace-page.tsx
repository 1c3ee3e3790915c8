/**
 * One namespace of a cluster: its objects by kind (the kind in the URL, ?resource=deployments.v1.apps; pods until
 * picked) and, in a tab of its own, its Events.
 */
import { useParams, useSearchParams } from 'react-router';
import { parseResourceKey, resourceKey, useApiResources } from '../kube/discovery.ts';
import { QueryView } from '../ui/query-view.tsx';
import { Tabs } from '../ui/tabs.tsx';
import { EventsTable } from './events-table.tsx';
import { browsableResources, KindList } from './kind-list.tsx';
import { LiveBreadcrumb } from './live-breadcrumb.tsx';
import { liveNamespacePage } from './live-paths.ts';
import { ObjectsTable } from './objects-table.tsx';
import './live.css';

export function NamespacePage() {
  const { cluster = '', namespace = '', tab = 'objects' } = useParams();
  const [params] = useSearchParams();
  const resources = useApiResources(cluster);
  const picked = parseResourceKey(params.get('resource') ?? 'pods.v1');
  return (
    <>
      <LiveBreadcrumb cluster={cluster} namespace={namespace} />
      <h1>{namespace}</h1>
      <Tabs
        tabs={[
          { to: liveNamespacePage(cluster, namespace), label: 'Objects', end: true },
          { to: liveNamespacePage(cluster, namespace, 'events'), label: 'Events' },
        ]}
      />
      {tab === 'events' && <EventsTable cluster={cluster} namespace={namespace} />}
      {tab === 'objects' && (
        <QueryView query={resources} what={`the kinds ${cluster} serves`}>
          {(all) => {
            const browsable = browsableResources(all);
            const selected = browsable.find((resource) => resourceKey(resource) === resourceKey(picked)) ?? browsable[0];
            if (!selected) return <p className="muted">{cluster} serves no namespaced kinds you may list.</p>;
            return (
              <div className="live-split">
                <KindList cluster={cluster} namespace={namespace} resources={browsable} selected={selected} />
                <ObjectsTable key={resourceKey(selected)} cluster={cluster} namespace={namespace} resource={selected} />
              </div>
            );
          }}
        </QueryView>
      )}
    </>
  );
}
