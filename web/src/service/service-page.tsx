/**
 * One service: its header (health, revision, sync progress) and tabs for components, revisions, configuration and,
 * when it has a docsPath, its docs.
 */
import { Link, useParams } from 'react-router';
import { useService } from '../api/queries.ts';
import { QueryView } from '../ui/query-view.tsx';
import { Tabs } from '../ui/tabs.tsx';
import { ComponentsPanel } from './components-panel.tsx';
import { ConfigurationPanel } from './configuration-panel.tsx';
import { DocsPanel } from './docs-panel.tsx';
import { RevisionsPanel } from './revisions-panel.tsx';
import { ServiceHeader } from './service-header.tsx';

export function ServicePage() {
  const { cluster = '', name = '', tab = 'components' } = useParams();
  const service = useService(cluster, name);
  const base = `/fleet/${cluster}/${name}`;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/fleet">Fleet</Link> › <Link to={`/fleet?cluster=${encodeURIComponent(cluster)}`}>{cluster}</Link> › {name}
      </p>
      <QueryView query={service} what={`service ${cluster}/${name}`}>
        {(found) => (
          <>
            <ServiceHeader service={found} />
            <Tabs
              tabs={[
                { to: base, label: `Components (${found.components.length})`, end: true },
                { to: `${base}/revisions`, label: `Revisions (${found.revision.number})` },
                { to: `${base}/configuration`, label: 'Configuration' },
                ...(found.docsPath ? [{ to: `${base}/docs`, label: 'Docs' }] : []),
              ]}
            />
            {tab === 'components' && <ComponentsPanel service={found} />}
            {tab === 'revisions' && <RevisionsPanel service={found} />}
            {tab === 'configuration' && <ConfigurationPanel service={found} />}
            {tab === 'docs' && found.docsPath && <DocsPanel service={found} />}
          </>
        )}
      </QueryView>
    </>
  );
}
