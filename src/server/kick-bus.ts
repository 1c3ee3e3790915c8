/**
 * Kicks across replicas: a change handled by one replica must reach an agent whose push channel another replica
 * holds. On PostgreSQL every replica LISTENs on one channel and a kick is a NOTIFY (delivered to all listeners,
 * the sender included), so no replica's memory is needed for correctness; on SQLite there is one replica and the
 * kick goes straight to its channels. The same channel carries fleet changes for browsers (fleet-changes.ts). The
 * listening connection is re-opened with backoff when it drops (a database
 * restart); kicks sent meanwhile are lost, which costs the agent one poll interval, never a revision.
 */
import pg from 'pg';
import type { Logger } from '../logger.ts';
import type { FleetChange } from '../api/events.ts';
import { sleep } from '../sleep.ts';

const CHANNEL = 'gantry_kicks';

export interface KickBus {
  /** Sends the kick to the cluster's agents, on whichever replica holds their channel. */
  publish(clusterId: string, serviceId: string): void;
  /** Tells every replica's browsers of a change. */
  announce(change: FleetChange): void;
  close(): Promise<void>;
}

/** What a replica does with what the bus delivers. */
export interface BusHandlers {
  onKick: (clusterId: string, serviceId: string) => void;
  onChange: (change: FleetChange) => void;
}

/** For the embedded database: the one replica kicks its own channels. */
export async function localKickBus(handlers: BusHandlers): Promise<KickBus> {
  return { publish: handlers.onKick, announce: handlers.onChange, close: async () => undefined };
}

/** For PostgreSQL at `url`. Resolves once it listens. */
export async function postgresKickBus(url: string, handlers: BusHandlers, log: Logger): Promise<KickBus> {
  const stopping = new AbortController();
  const publisher = new pg.Pool({ connectionString: url, max: 2 });
  publisher.on('error', () => undefined);
  publisher.on('connect', (client) => client.on('error', () => undefined));
  let listener = await listen(url, handlers, log);
  const keepListening = (async () => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      await listener.ended;
      if (stopping.signal.aborted) return;
      log.warn('kick listener lost its database connection; reconnecting');
      for (;;) {
        await sleep(Math.min(10_000, 500 * 2 ** failures), stopping.signal).catch(() => undefined);
        if (stopping.signal.aborted) return;
        try {
          listener = await listen(url, handlers, log);
          failures = 0;
          break;
        } catch {
          failures += 1;
        }
      }
    }
  })();
  return {
    publish(clusterId, serviceId) {
      publisher.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ clusterId, serviceId })]).catch((error: Error) => {
        log.warn({ error: error.message }, 'kick not sent; the agent will see the change at its next poll');
      });
    },
    announce(change) {
      // A lost change costs a browser one stale view until the next; nothing to log per change.
      publisher.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ change })]).catch(() => undefined);
    },
    async close() {
      stopping.abort();
      await listener.client.end().catch(() => undefined);
      await keepListening;
      await publisher.end();
    },
  };
}

interface Listener {
  client: pg.Client;
  /** Resolves when the connection ends, for whatever reason. */
  ended: Promise<void>;
}

async function listen(url: string, handlers: BusHandlers, log: Logger): Promise<Listener> {
  const client = new pg.Client({ connectionString: url });
  const ended = new Promise<void>((resolve) => {
    client.on('end', () => resolve());
    client.on('error', () => resolve());
  });
  await client.connect();
  client.on('notification', (message) => {
    try {
      const payload = JSON.parse(message.payload ?? '') as { clusterId: string; serviceId: string } | { change: FleetChange };
      if ('change' in payload) handlers.onChange(payload.change);
      else handlers.onKick(payload.clusterId, payload.serviceId);
    } catch {
      log.warn({ payload: message.payload }, 'ignoring a malformed kick');
    }
  });
  await client.query(`LISTEN ${CHANNEL}`);
  return { client, ended };
}
