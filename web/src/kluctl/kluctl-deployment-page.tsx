/**
 * One KluctlDeployment, kept current by the watch of its cluster's KluctlDeployments: its header (health, source,
 * target, commit, why it is not ready), the actions a writer may take with the controller's progress, and tabs
 * for its results (the last deploy, diff and validation, requests, drift, one result in full with its diffs), its
 * Events and its manifest as the cluster has it.
 */
import { Link, useParams } from 'react-router';
import { ObjectYaml } from '../kube/object-yaml.tsx';
import { EventsTable } from '../live/events-table.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { Tabs } from '../ui/tabs.tsx';
import { KluctlActionsBar } from './kluctl-actions-bar.tsx';
import { KluctlHeader } from './kluctl-header.tsx';
import { useKluctlDeployments } from './kluctl-queries.ts';
import { kluctlPage } from './kluctl-resource.ts';
import { ResultsPanel } from './results-panel.tsx';
import './kluctl.css';

export function KluctlDeploymentPage() {
  const { cluster = '', namespace = '', name = '', tab = 'results' } = useParams();
  const list = useKluctlDeployments(cluster);
  const base = kluctlPage(cluster, { metadata: { namespace, name } });
  return (
    <>
      <p className="breadcrumb">
        <Link to="/kluctl">KluctlDeployments</Link> › {cluster} › {namespace}/{name}
      </p>
      <QueryView query={list} what={`KluctlDeployment ${namespace}/${name}`}>
        {(all) => {
          const deployment = all.items.find((item) => item.metadata.namespace === namespace && item.metadata.name === name);
          if (!deployment)
            return (
              <p className="muted">
                There is no KluctlDeployment {namespace}/{name} on {cluster} (any more). See <Link to="/kluctl">all of them</Link>.
              </p>
            );
          return (
            <>
              <KluctlHeader cluster={cluster} deployment={deployment} />
              <KluctlActionsBar cluster={cluster} deployment={deployment} />
              <Tabs
                tabs={[
                  { to: base, label: 'Results', end: true },
                  { to: `${base}/events`, label: 'Events' },
                  { to: `${base}/manifest`, label: 'Manifest' },
                ]}
              />
              {tab === 'results' && <ResultsPanel cluster={cluster} deployment={deployment} />}
              {tab === 'events' && <EventsTable cluster={cluster} namespace={namespace} involved={{ kind: 'KluctlDeployment', name }} />}
              {tab === 'manifest' && <ObjectYaml object={deployment} label={`Manifest of ${namespace}/${name}`} />}
            </>
          );
        }}
      </QueryView>
    </>
  );
}
