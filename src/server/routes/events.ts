/**
 * GET /v1/events: the fleet's changes as server-sent events, for the UI's live updates. Each event's data is a
 * FleetChange (`{"kind": "service", "id": "…"}`), a hint to refetch through the API, which checks the reader's
 * rights; a comment every 25 s keeps proxies from closing an idle stream. EventSource reconnects by itself.
 */
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { userAccess } from '../auth.ts';
import type { FleetChanges } from '../fleet-changes.ts';

const KEEPALIVE_MS = 25_000;

export function eventRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; changes: FleetChanges }): void {
  const { readers } = userAccess(deps.db);
  app.get('/v1/events', { ...readers, schema: { tags: ['events'], produces: ['text/event-stream'] } }, (request, reply) => {
    reply.hijack();
    const stream = reply.raw;
    stream.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    stream.write(': connected\n\n');
    const unsubscribe = deps.changes.subscribe((change) => stream.write(`data: ${JSON.stringify(change)}\n\n`));
    const keepalive = setInterval(() => stream.write(': keepalive\n\n'), KEEPALIVE_MS);
    request.raw.once('close', () => {
      clearInterval(keepalive);
      unsubscribe();
    });
  });
}
