/**
 * The fleet's state as Prometheus gauges, read from the database at each scrape (so every replica reports the same
 * fleet), plus the agents whose push channel this replica holds.
 */
import type { Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import { SERVICE_STATUSES } from '../api/services.ts';
import { CLUSTER_PING_HEALTHY_MS, countClusters } from '../store/clusters.ts';
import type { Database } from '../store/schema.ts';
import { countServicesByStatus } from '../store/reports.ts';
import type { PushChannels } from './push-channels.ts';

export function registerFleetMetrics(registry: Registry, deps: { db: Kysely<Database>; channels: PushChannels }): void {
  const { db, channels } = deps;
  new Gauge({
    name: 'gantry_fleet_agent_channels',
    help: 'Agents holding a push channel to this replica.',
    registers: [registry],
    collect() {
      this.set(channels.connected());
    },
  });
  new Gauge({
    name: 'gantry_fleet_clusters',
    help: 'Clusters registered, and those whose agent pinged in the last 5 minutes (pinged="true").',
    labelNames: ['pinged'],
    registers: [registry],
    async collect() {
      const counts = await countClusters(db, new Date(Date.now() - CLUSTER_PING_HEALTHY_MS));
      this.set({ pinged: 'true' }, counts.pinged);
      this.set({ pinged: 'false' }, counts.total - counts.pinged);
    },
  });
  new Gauge({
    name: 'gantry_fleet_agent_version_skew',
    help: "Clusters whose agent last reported another version than the one it should run (its pin, else the server's own).",
    registers: [registry],
    async collect() {
      this.set((await countClusters(db, new Date())).skewed);
    },
  });
  new Gauge({
    name: 'gantry_fleet_services',
    help: 'Services not being deleted, by status (as Plural derives it from the agents reports).',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await countServicesByStatus(db);
      for (const status of SERVICE_STATUSES) this.set({ status }, counts[status] ?? 0);
    },
  });
}
