/**
 * The clusters: agent health (and, for a cluster Cluster API makes, where its provisioning stands until it is done),
 * Kubernetes and agent versions (with the wanted one when they differ), last ping, tags and how many services are healthy.
 */
import type { Cluster, Service } from '../api/types.ts';
import { clusterHealth } from '../health.ts';
import { StatusBadge } from '../ui/status-badge.tsx';
import { Tags } from '../ui/tags.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';

export function ClustersTable(props: { clusters: Cluster[]; services: Service[]; total: number; onPick: (name: string) => void }) {
  return (
    <>
      <h2>
        Clusters <Count shown={props.clusters.length} total={props.total} />
      </h2>
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Health</th>
            <th>Kubernetes</th>
            <th>Agent</th>
            <th>Last ping</th>
            <th>Tags</th>
            <th>Services healthy</th>
          </tr>
        </thead>
        <tbody>
          {props.clusters.map((cluster) => {
            const services = props.services.filter((service) => service.cluster === cluster.name);
            return (
              <tr key={cluster.id} data-cluster={cluster.name}>
                <td>
                  <button type="button" className="link" title="show its services only" onClick={() => props.onPick(cluster.name)}>
                    {cluster.name}
                  </button>
                </td>
                <td>
                  <StatusBadge {...clusterHealth(cluster)} /> <Provisioning cluster={cluster} />
                </td>
                <td>{cluster.kubernetesVersion ?? <span className="muted">—</span>}</td>
                <td>
                  <AgentVersion cluster={cluster} />
                </td>
                <td>
                  <TimeAgo time={cluster.pingedAt} />
                </td>
                <td>
                  <Tags tags={cluster.tags} />
                </td>
                <td>
                  {services.filter((service) => service.status === 'healthy').length} / {services.length}
                </td>
              </tr>
            );
          })}
          {props.clusters.length === 0 && <EmptyRow columns={7} text={props.total === 0 ? 'No clusters yet.' : undefined} />}
        </tbody>
      </table>
    </>
  );
}

/** Where Cluster API's making of the cluster stands, with Cluster API's reason as the title; nothing once it is available. */
function Provisioning(props: { cluster: Cluster }) {
  const status = props.cluster.provisioningStatus;
  if (!status || status.state === 'RUNNING') return null;
  return (
    <span className={`tag ${status.state === 'FAILED' ? 'bad' : 'warn'} provisioning`} title={status.message}>
      provisioning: {status.state.toLowerCase()}
    </span>
  );
}

/** The agent's version, and the one it should run while they differ (an upgrade under way or stuck). */
function AgentVersion(props: { cluster: Cluster }) {
  const { agentVersion, wantedAgentVersion, agentVersionPin } = props.cluster;
  if (agentVersion === null) return <span className="muted">—</span>;
  if (agentVersion === wantedAgentVersion) return <>{agentVersion}</>;
  const why = agentVersionPin === null ? "the server's own version" : 'its pinned version';
  return (
    <>
      {agentVersion}{' '}
      <span className="tag warn agent-skew" title={`its agent should run ${wantedAgentVersion}, ${why}`}>
        → {wantedAgentVersion}
      </span>
    </>
  );
}
