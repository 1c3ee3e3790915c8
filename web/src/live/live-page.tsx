/** Live: the clusters whose namespaces and objects may be browsed (under `gantry webui`, its one cluster at once). */
import { Link, Navigate } from 'react-router';
import { useClusters } from '../api/queries.ts';
import { clusterHealth } from '../health.ts';
import { useShownClusters } from '../kube/shown-clusters.ts';
import { useUiMode } from '../session/ui-mode.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { liveClusterPage } from './live-paths.ts';

export function LivePage() {
  const mode = useUiMode();
  const shown = useShownClusters();
  const clusters = useClusters(mode.kind === 'fleet');
  if (mode.kind === 'local') return <Navigate to={liveClusterPage(mode.config.cluster)} replace />;
  if (shown.isPending) return <LoadingPage what="clusters" />;
  if (shown.error) return <ErrorMessage error={shown.error} />;
  return (
    <>
      <h1>Live</h1>
      <p className="muted">A cluster's namespaces and objects as they are now, read through the auth proxy with your roles there.</p>
      <table aria-label="Clusters">
        <thead>
          <tr>
            <th>Cluster</th>
            <th>Agent</th>
            <th>Kubernetes</th>
          </tr>
        </thead>
        <tbody>
          {shown.names.map((name) => {
            const cluster = clusters.data?.find((candidate) => candidate.name === name);
            return (
              <tr key={name} data-cluster={name}>
                <td>
                  <Link to={liveClusterPage(name)}>{name}</Link>
                </td>
                <td>{cluster && <StatusBadge {...clusterHealth(cluster)} />}</td>
                <td>{cluster?.kubernetesVersion ?? <span className="muted">—</span>}</td>
              </tr>
            );
          })}
          {shown.names.length === 0 && <EmptyRow columns={3} text="No clusters yet." />}
        </tbody>
      </table>
    </>
  );
}
