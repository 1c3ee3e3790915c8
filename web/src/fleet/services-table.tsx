/** The services: health, where they run, the revision asked for and the one applied, and their source. */
import { Link } from 'react-router';
import type { Cluster, Service } from '../api/types.ts';
import { serviceHealth } from '../health.ts';
import { sourceText } from '../service/source-text.ts';
import { StatusBadge } from '../ui/status-badge.tsx';
import { clusterOf } from './fleet-filter.ts';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';

export function ServicesTable({ services, clusters, total }: { services: Service[]; clusters: Cluster[]; total: number }) {
  return (
    <>
      <h2>
        Services <Count shown={services.length} total={total} />
      </h2>
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Cluster</th>
            <th>Namespace</th>
            <th>Health</th>
            <th>Revision</th>
            <th>Source</th>
            <th>Errors</th>
          </tr>
        </thead>
        <tbody>
          {services.map((service) => (
            <tr key={service.id} data-service={`${service.cluster}/${service.name}`}>
              <td>
                <Link to={`/fleet/${service.cluster}/${service.name}`}>{service.name}</Link>
              </td>
              <td>{service.cluster}</td>
              <td>{service.namespace}</td>
              <td>
                <StatusBadge {...serviceHealth(service, clusterOf(clusters, service))} />
              </td>
              <td>
                #{service.revision.number}
                {service.appliedRevision !== service.revision.number && (
                  <span className="muted"> (applied {service.appliedRevision === null ? 'none' : `#${service.appliedRevision}`})</span>
                )}
              </td>
              <td className="source">{sourceText(service)}</td>
              <td>
                {service.errors.length > 0 ? <span className="error">{service.errors.length}</span> : <span className="muted">0</span>}
              </td>
            </tr>
          ))}
          {services.length === 0 && <EmptyRow columns={7} text={total === 0 ? 'No services yet.' : undefined} />}
        </tbody>
      </table>
    </>
  );
}
