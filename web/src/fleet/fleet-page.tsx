/**
 * The fleet at a glance: every cluster the user may read with its agent's health, and every service with its
 * health, filtered by a search, a health and a cluster. The filter lives in the URL, so a filtered view can be
 * shared and survives a reload.
 */
import { useSearchParams } from 'react-router';
import { useClusters, useServices } from '../api/queries.ts';
import type { Health } from '../health.ts';
import { QueryView } from '../ui/query-view.tsx';
import { SearchBox } from '../ui/search-box.tsx';
import { ClustersTable } from './clusters-table.tsx';
import { type FleetFilter, matchingClusters, matchingServices } from './fleet-filter.ts';
import { ServicesTable } from './services-table.tsx';

const HEALTHS: Health[] = ['Healthy', 'Progressing', 'Degraded', 'Unknown'];

export function FleetPage() {
  const clusters = useClusters();
  const services = useServices();
  const [params, setParams] = useSearchParams();
  const filter: FleetFilter = { text: params.get('q') ?? '', health: params.get('health') ?? '', cluster: params.get('cluster') ?? '' };
  const setFilter = (name: 'q' | 'health' | 'cluster', value: string) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set(name, value);
        else next.delete(name);
        return next;
      },
      { replace: true },
    );

  return (
    <>
      <h1>Fleet</h1>
      <div className="toolbar">
        <SearchBox value={filter.text} onChange={(value) => setFilter('q', value)} placeholder="Search clusters, services, tags" />
        <select aria-label="Health" value={filter.health} onChange={(event) => setFilter('health', event.target.value)}>
          <option value="">Any health</option>
          {HEALTHS.map((health) => (
            <option key={health}>{health}</option>
          ))}
        </select>
        <select aria-label="Cluster" value={filter.cluster} onChange={(event) => setFilter('cluster', event.target.value)}>
          <option value="">All clusters</option>
          {clusters.data?.map((cluster) => (
            <option key={cluster.id}>{cluster.name}</option>
          ))}
        </select>
      </div>
      <section aria-label="Clusters">
        <QueryView query={clusters} what="clusters">
          {(all) => (
            <ClustersTable
              clusters={matchingClusters(all, filter)}
              services={services.data ?? []}
              total={all.length}
              onPick={(name) => setFilter('cluster', name)}
            />
          )}
        </QueryView>
      </section>
      <section aria-label="Services">
        <QueryView query={services} what="services">
          {(all) => (
            <ServicesTable
              services={matchingServices(all, clusters.data ?? [], filter)}
              clusters={clusters.data ?? []}
              total={all.length}
            />
          )}
        </QueryView>
      </section>
    </>
  );
}
