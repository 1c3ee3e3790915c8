/**
 * Kicks across replicas: a change handled by one replica must reach an agent whose push channel another replica
 * holds. On PostgreSQL every replica LISTENs on one channel and a kick is a NOTIFY (delivered to all listeners,
 * the sender included; what one turn of the event loop sends goes in one statement, packed), so no replica's memory
 * is needed for correctness; on SQLite there is one replica and the
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
  const outbox = new Outbox(async (messages) => {
    await publisher.query('SELECT pg_notify($1, message) FROM unnest($2::text[]) AS message', [CHANNEL, messages]);
  }, log);
  return {
    publish: (clusterId, serviceId) => outbox.add({ kicks: [[clusterId, serviceId]] }),
    announce: (change) => outbox.add({ changes: [change] }),
    async close() {
      await outbox.drained();
      stopping.abort();
      await listener.client.end().catch(() => undefined);
      await keepListening;
      await publisher.end();
    },
  };
}

/** One NOTIFY's payload: kicks ([cluster id, service id]) and fleet changes, either may be absent. */
interface BusMessage {
  kicks?: Array<[string, string]>;
  changes?: FleetChange[];
}

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more; a message is closed below this. */
const MESSAGE_BYTES = 7_000;

/**
 * What the replica's changes send, gathered until the event loop turns and sent in one statement: a global
 * service's template change kicks 10,000 agents, and a query (a commit) per kick was the most of its time on
 * PostgreSQL. Kicks are packed into as few messages as their size allows. A failed send is logged and lost, as a
 * single kick was before: it costs the agents one poll interval, never a revision.
 */
class Outbox {
  readonly #send: (messages: string[]) => Promise<void>;
  readonly #log: Logger;
  #kicks: Array<[string, string]> = [];
  #changes: FleetChange[] = [];
  #flushing: Promise<void> | undefined;

  constructor(send: (messages: string[]) => Promise<void>, log: Logger) {
    this.#send = send;
    this.#log = log;
  }

  add(message: BusMessage): void {
    this.#kicks.push(...(message.kicks ?? []));
    this.#changes.push(...(message.changes ?? []));
    this.#flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#flush());
  }

  /** Resolves once what was added has been sent (or failed). */
  async drained(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #flush(): Promise<void> {
    const kicks = this.#kicks.splice(0);
    const changes = this.#changes.splice(0);
    try {
      await this.#send([...packed(kicks, (part) => ({ kicks: part })), ...packed(changes, (part) => ({ changes: part }))]);
    } catch (error) {
      this.#log.warn(
        { error: (error as Error).message, kicks: kicks.length },
        'kicks not sent; the agents will see the change at their next poll',
      );
    } finally {
      this.#flushing = undefined;
      if (this.#kicks.length > 0 || this.#changes.length > 0) this.add({});
    }
  }
}

/** `items` as JSON messages of at most MESSAGE_BYTES each (an item larger than that alone in its message). */
function packed<T>(items: readonly T[], wrap: (part: T[]) => BusMessage): string[] {
  const messages: string[] = [];
  let part: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (part.length > 0 && bytes + size > MESSAGE_BYTES) {
      messages.push(JSON.stringify(wrap(part)));
      part = [];
      bytes = 0;
    }
    part.push(item);
    bytes += size;
  }
  if (part.length > 0) messages.push(JSON.stringify(wrap(part)));
  return messages;
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
    let payload: BusMessage;
    try {
      payload = JSON.parse(message.payload ?? '') as BusMessage;
    } catch {
      log.warn({ payload: message.payload }, 'ignoring a malformed kick');
      return;
    }
    for (const [clusterId, serviceId] of payload.kicks ?? []) handlers.onKick(clusterId, serviceId);
    for (const change of payload.changes ?? []) handlers.onChange(change);
  });
  await client.query(`LISTEN ${CHANNEL}`);
  return { client, ended };
}
