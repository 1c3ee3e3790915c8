/**
 * The push side of the agent protocol: each connected agent holds a WebSocket (GET /v1/agent/socket with its
 * deploy token), and a change of one of its cluster's services sends `{"kick": "<service id>"}` down it, so the
 * agent polls at once instead of at its next interval (Plural's deployAgentNotification kick). Everything also
 * works by polling alone: a lost message or socket only costs one interval. The same socket carries the auth
 * proxy's tunnel (binary frames, tunnel/mux.ts): `tunnel(clusterId)` opens streams to the cluster's agent.
 *
 * A socket lives no longer than the deploy token it was opened with: one whose token was revoked or expired (on any
 * replica) is closed at the next check, so a leaked token cannot keep receiving users' proxied requests.
 */
import type { WebSocket } from 'ws';
import { TunnelMux } from '../tunnel/mux.ts';

/** Sent every this many milliseconds, so idle proxies keep the connection and dead peers are noticed. */
const PING_INTERVAL_MS = 30_000;

/** The close code of a socket whose deploy token stopped working (4000-4999: the application's own). */
export const TOKEN_ENDED_CLOSE_CODE = 4001;

export interface PushChannelsOptions {
  /** Which of these deploy token ids are still valid (store/deploy-tokens.ts validDeployTokens). */
  validTokens: (tokenIds: string[]) => Promise<Set<string>>;
  /** A failed token check; the sockets stay until the next one. */
  onCheckError: (error: unknown) => void;
}

/**
 * The agent sockets connected to this server process, by cluster id (a cluster may hold several for a moment).
 * kick() reaches only the agents connected here, not those of other replicas. Every PING_INTERVAL_MS the sockets are
 * pinged and their tokens checked (checkTokens); the timer is unref'd, so it keeps no process alive. The owner calls
 * close() at shutdown, which stops it and closes every socket with 1001.
 */
export class PushChannels {
  readonly #sockets = new Map<string, Set<WebSocket>>();
  readonly #tunnels = new WeakMap<WebSocket, TunnelMux>();
  readonly #tokens = new Map<WebSocket, string>();
  readonly #options: PushChannelsOptions;
  readonly #pinger: NodeJS.Timeout;

  constructor(options: PushChannelsOptions) {
    this.#options = options;
    this.#pinger = setInterval(() => {
      for (const sockets of this.#sockets.values()) for (const socket of sockets) socket.ping();
      this.checkTokens().catch(options.onCheckError);
    }, PING_INTERVAL_MS);
    this.#pinger.unref();
  }

  /** Keeps `socket`, opened with the deploy token `tokenId`, as a channel of the cluster until it closes. */
  add(clusterId: string, tokenId: string, socket: WebSocket): void {
    const sockets = this.#sockets.get(clusterId) ?? new Set<WebSocket>();
    sockets.add(socket);
    this.#sockets.set(clusterId, sockets);
    this.#tunnels.set(socket, new TunnelMux(socket));
    this.#tokens.set(socket, tokenId);
    socket.on('close', () => {
      sockets.delete(socket);
      this.#tokens.delete(socket);
      if (sockets.size === 0) this.#sockets.delete(clusterId);
    });
  }

  /** Closes every socket whose deploy token is no longer valid (revoked, expired, or its cluster deleted). */
  async checkTokens(): Promise<void> {
    if (this.#tokens.size === 0) return;
    // The sockets of now only: one added while the database answers was authenticated after this check began.
    const checked = [...this.#tokens];
    const valid = await this.#options.validTokens([...new Set(checked.map(([, tokenId]) => tokenId))]);
    for (const [socket, tokenId] of checked) {
      if (!valid.has(tokenId)) socket.close(TOKEN_ENDED_CLOSE_CODE, 'deploy token revoked or expired');
    }
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
