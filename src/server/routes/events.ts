/**
 * GET /v1/events: the fleet's changes as server-sent events, for the UI's live updates. Each event's data is a
 * FleetChange (`{"kind": "service", "id": "…"}`), a hint to refetch through the API, which checks the reader's
 * rights; a comment every 25 s keeps proxies from closing an idle stream. EventSource reconnects by itself.
 * A user bound within a scope hears only of the clusters, services and pipelines that scope lets them read (the
 * hint alone would tell them what exists elsewhere and when it changes); one gone by then is left out.
 */
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { Target } from '../../rights.ts';
import { listClusters } from '../../store/clusters.ts';
import { getServiceById } from '../../store/services.ts';
import { mayDo, requestUser, userAccess } from '../auth.ts';
import type { FleetChange } from '../../api/events.ts';
import type { FleetChanges } from '../fleet-changes.ts';

const KEEPALIVE_MS = 25_000;

export function eventRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; changes: FleetChanges }): void {
  const { readers } = userAccess(deps.db);
  app.get('/v1/events', { ...readers, schema: { tags: ['events'], produces: ['text/event-stream'] } }, (request, reply) => {
    reply.hijack();
    const stream = reply.raw;
    stream.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    stream.write(': connected\n\n');
    const send = (change: FleetChange) => stream.write(`data: ${JSON.stringify(change)}\n\n`);
    const unscoped = requestUser(request).grants.some((grant) => grant.scope === 'all');
    const unsubscribe = deps.changes.subscribe((change) => {
      if (unscoped) return void send(change);
      void targetOf(deps.db, change).then((target) => target && mayDo(request, 'read', target) && send(change));
    });
    const keepalive = setInterval(() => stream.write(': keepalive\n\n'), KEEPALIVE_MS);
    request.raw.once('close', () => {
      clearInterval(keepalive);
      unsubscribe();
    });
  });
}

/** What `change` names, as rights see it; undefined when it is gone (or the database cannot say). */
async function targetOf(db: Kysely<Database>, change: FleetChange): Promise<Target | undefined> {
  if (change.kind === 'pipeline') return { pipeline: change.name };
  // A global service is read by those whose scope holds one of its copies: its rollout's hint goes to the unscoped,
  // and the others refetch it on their copies' service hints.
  if (change.kind === 'globalservice') return undefined;
  try {
    const clusters = await listClusters(db);
    if (change.kind === 'cluster') {
      const cluster = clusters.find((candidate) => candidate.id === change.id);
      return cluster && { cluster };
    }
    const service = await getServiceById(db, change.id!);
    const cluster = clusters.find((candidate) => candidate.id === service.clusterId);
    return cluster && { cluster, service };
  } catch {
    return undefined;
  }
}
