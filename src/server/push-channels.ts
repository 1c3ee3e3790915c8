/**
 * The push side of the agent protocol: each connected agent holds a WebSocket (GET /v1/agent/socket with its
 * deploy token), and a change of one of its cluster's services sends `{"kick": "<service id>"}` down it, so the
 * agent polls at once instead of at its next interval (Plural's deployAgentNotification kick). Everything also
 * works by polling alone: a lost message or socket only costs one interval. The same socket carries the auth
 * proxy's tunnel (binary frames, tunnel/mux.ts): `tunnel(clusterId)` opens streams to the cluster's agent.
 */
import type { WebSocket } from 'ws';
import { TunnelMux } from '../tunnel/mux.ts';

/** Sent every this many milliseconds, so idle proxies keep the connection and dead peers are noticed. */
const PING_INTERVAL_MS = 30_000;

/**
 * The agent sockets connected to this server process, by cluster id (a cluster may hold several for a moment).
 * kick() reaches only the agents connected here, not those of other replicas. The ping timer is unref'd, so it keeps
 * no process alive; the owner calls close() at shutdown, which stops it and closes every socket with 1001.
 */
export class PushChannels {
  readonly #sockets = new Map<string, Set<WebSocket>>();
  readonly #tunnels = new WeakMap<WebSocket, TunnelMux>();
  readonly #pinger: NodeJS.Timeout;

  constructor() {
    this.#pinger = setInterval(() => {
      for (const sockets of this.#sockets.values()) for (const socket of sockets) socket.ping();
    }, PING_INTERVAL_MS);
    this.#pinger.unref();
  }

  /** Keeps `socket` as a channel of the cluster until it closes. */
  add(clusterId: string, socket: WebSocket): void {
    const sockets = this.#sockets.get(clusterId) ?? new Set<WebSocket>();
    sockets.add(socket);
    this.#sockets.set(clusterId, sockets);
    this.#tunnels.set(socket, new TunnelMux(socket));
    socket.on('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) this.#sockets.delete(clusterId);
    });
  }

  /** Tells the cluster's connected agents that the service changed. */
  kick(clusterId: string, serviceId: string): void {
    const message = JSON.stringify({ kick: serviceId });
    for (const socket of this.#sockets.get(clusterId) ?? []) socket.send(message);
  }

  /** The tunnel to the cluster's agent (its newest socket, when a restarting agent briefly holds two), if connected. */
  tunnel(clusterId: string): TunnelMux | undefined {
    const newest = [...(this.#sockets.get(clusterId) ?? [])].at(-1);
    return newest && this.#tunnels.get(newest);
  }

  /** Number of connected agents. */
  connected(): number {
    let count = 0;
    for (const sockets of this.#sockets.values()) count += sockets.size;
    return count;
  }

  close(): void {
    clearInterval(this.#pinger);
    for (const sockets of this.#sockets.values()) for (const socket of sockets) socket.close(1001, 'server stopping');
  }
}
