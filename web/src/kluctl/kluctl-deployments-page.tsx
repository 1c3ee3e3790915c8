/**
 * Every KluctlDeployment of every cluster shown (kube/shown-clusters.ts), by cluster, kept current by a watch
 * each: health, source, target, the last deploy's changes and drift. A search over names, namespaces, targets and
 * sources narrows them; it is in the URL.
 */
import { useSearchParams } from 'react-router';
import { useShownClusters } from '../kube/shown-clusters.ts';
import { useUiMode } from '../session/ui-mode.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { SearchBox } from '../ui/search-box.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { KluctlDeploymentsTable } from './kluctl-deployments-table.tsx';
import './kluctl.css';

export function KluctlDeploymentsPage() {
  const clusters = useShownClusters();
  const mode = useUiMode();
  // Under gantry webui the one cluster is the kubeconfig's context; its name says more than `local`.
  const label = (cluster: string) => (mode.kind === 'local' ? mode.config.context : cluster);
  const [params, setParams] = useSearchParams();
  const text = params.get('q') ?? '';
  return (
    <>
      <h1>KluctlDeployments</h1>
      <div className="toolbar">
        <SearchBox
          value={text}
          onChange={(value) => setParams(value ? { q: value } : {}, { replace: true })}
          placeholder="Search names, namespaces, targets, sources"
        />
      </div>
      {clusters.isPending && <LoadingPage what="clusters" />}
      {!clusters.isPending && clusters.error && <ErrorMessage error={clusters.error} />}
      {!clusters.isPending && clusters.names.length === 0 && !clusters.error && <p className="muted">No clusters yet.</p>}
      {!clusters.isPending &&
        clusters.names.map((cluster) => <KluctlDeploymentsTable key={cluster} cluster={cluster} label={label(cluster)} text={text} />)}
    </>
  );
}
