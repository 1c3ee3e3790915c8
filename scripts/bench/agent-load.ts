/**
 * A load generator speaking the agent protocol, run as a child process of bench-fleet.ts (node:child_process fork,
 * commands and answers over the IPC channel) so that the server's CPU and memory are measured without it. Each
 * simulated agent holds its cluster's push channel (a real WebSocket to /v1/agent/socket with its real deploy
 * token) and polls GET /v1/agent/services every interval plus random jitter, as `gantry agent run` does; a kick on
 * the channel makes it poll at once (the real agent's Wakeup). It applies nothing and reports nothing: it is the
 * server's load, not an agent.
 *
 * The WebSockets are one connection each (the server must hold one per agent), while the polls share a bounded
 * pool of keep-alive HTTP connections (an undici Agent): 10,000 sockets plus 10,000 HTTP connections would pass
 * the machine's 20,000 open files, and a fleet's polls arrive spread over the interval anyway, so a pool of a few
 * dozen connections carries them without queueing (the latency measured includes any wait for a free connection).
 */
import { Agent, request } from 'undici';
import WebSocket from 'ws';

/** Commands from the bench; each is answered with one message of the same `type`. */
export type LoadCommand =
  | { type: 'start'; server: string; tokens: string[]; intervalMs: number; jitterMs: number; httpConnections: number }
  | { type: 'arm' }
  | { type: 'kicks' }
  | { type: 'window'; from: number; to: number }
  | { type: 'stop' };

export type LoadAnswer =
  | { type: 'start'; connected: number; failed: number; firstError?: string }
  | { type: 'arm' }
  | { type: 'kicks'; received: number; first: number; last: number }
  | { type: 'window'; latenciesMs: number[]; errors: number; firstError?: string }
  | { type: 'stop' };

/** WebSocket handshakes in flight at once while connecting, so the server is not hit by 10,000 at one instant. */
const CONNECT_CONCURRENCY = 100;

interface Poll {
  /** Epoch ms when the poll was sent. */
  at: number;
  ms: number;
  error?: string;
}

class SimulatedAgent {
  socket: WebSocket | undefined;
  /** Epoch ms of the first kick since the last `arm`, or 0. */
  kickedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #load: Load;
  readonly #token: string;

  constructor(load: Load, token: string) {
    this.#load = load;
    this.#token = token;
  }

  /** Opens the push channel; resolves once open, rejects when the server refuses it. */
  connect(): Promise<void> {
    const url = new URL('/v1/agent/socket', this.#load.server);
    url.protocol = 'ws:';
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers: { authorization: `Bearer ${this.#token}` }, handshakeTimeout: 60_000 });
      socket.once('open', () => {
        this.socket = socket;
        resolve();
      });
      socket.once('error', reject);
      socket.on('message', () => {
        if (this.kickedAt === 0) this.kickedAt = Date.now();
        this.#schedule(0);
      });
    });
  }

  /** Starts polling at a random point of the first interval, so the fleet is spread as after a long uptime. */
  startPolling(): void {
    this.#schedule(Math.random() * this.#load.intervalMs);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.socket?.close(1001, 'load generator stopping');
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#poll(), ms);
  }

  async #poll(): Promise<void> {
    const at = Date.now();
    const started = performance.now();
    const poll: Poll = { at, ms: 0 };
    try {
      const { statusCode, body } = await request(new URL('/v1/agent/services', this.#load.server), {
        dispatcher: this.#load.http,
        headers: { authorization: `Bearer ${this.#token}` },
      });
      const text = await body.text();
      if (statusCode !== 200) poll.error = `HTTP ${statusCode}: ${text.slice(0, 200)}`;
    } catch (error) {
      poll.error = error instanceof Error ? error.message : String(error);
    }
    poll.ms = performance.now() - started;
    this.#load.polls.push(poll);
    if (!this.#load.stopped) this.#schedule(this.#load.intervalMs + Math.random() * this.#load.jitterMs);
  }
}

class Load {
  readonly server: string;
  readonly intervalMs: number;
  readonly jitterMs: number;
  readonly http: Agent;
  readonly polls: Poll[] = [];
  readonly agents: SimulatedAgent[];
  stopped = false;

  constructor(command: Extract<LoadCommand, { type: 'start' }>) {
    this.server = command.server;
    this.intervalMs = command.intervalMs;
    this.jitterMs = command.jitterMs;
    this.http = new Agent({ connections: command.httpConnections, keepAliveTimeout: 60_000 });
    this.agents = command.tokens.map((token) => new SimulatedAgent(this, token));
  }

  /** Connects every agent's push channel, CONNECT_CONCURRENCY at a time, then starts the polls. */
  async start(): Promise<Extract<LoadAnswer, { type: 'start' }>> {
    let next = 0;
    let failed = 0;
    let firstError: string | undefined;
    const worker = async () => {
      while (next < this.agents.length) {
        const agent = this.agents[next++]!;
        await agent.connect().catch((error: Error) => {
          failed += 1;
          firstError ??= error.message;
        });
      }
    };
    await Promise.all(Array.from({ length: CONNECT_CONCURRENCY }, worker));
    for (const agent of this.agents) agent.startPolling();
    return { type: 'start', connected: this.agents.length - failed, failed, ...(firstError ? { firstError } : {}) };
  }

  window(from: number, to: number): Extract<LoadAnswer, { type: 'window' }> {
    const inside = this.polls.filter((poll) => poll.at >= from && poll.at < to);
    const errors = inside.filter((poll) => poll.error !== undefined);
    return {
      type: 'window',
      latenciesMs: inside.filter((poll) => poll.error === undefined).map((poll) => poll.ms),
      errors: errors.length,
      ...(errors[0]?.error ? { firstError: errors[0].error } : {}),
    };
  }

  kicks(): Extract<LoadAnswer, { type: 'kicks' }> {
    const kicked = this.agents.filter((agent) => agent.kickedAt > 0);
    const times = kicked.map((agent) => agent.kickedAt);
    return { type: 'kicks', received: kicked.length, first: times.length > 0 ? Math.min(...times) : 0, last: Math.max(0, ...times) };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const agent of this.agents) agent.stop();
    await this.http.close();
  }
}

let load: Load | undefined;

async function answer(command: LoadCommand): Promise<LoadAnswer> {
  switch (command.type) {
    case 'start':
      load = new Load(command);
      return await load.start();
    case 'arm':
      for (const agent of load?.agents ?? []) agent.kickedAt = 0;
      return { type: 'arm' };
    case 'kicks':
      return load?.kicks() ?? { type: 'kicks', received: 0, first: 0, last: 0 };
    case 'window':
      return load?.window(command.from, command.to) ?? { type: 'window', latenciesMs: [], errors: 0 };
    case 'stop':
      await load?.stop();
      return { type: 'stop' };
  }
}

process.on('message', (command: LoadCommand) => {
  void answer(command).then((reply) => {
    process.send?.(reply);
    if (command.type === 'stop') process.disconnect();
  });
});
// The bench going away (even killed) closes the IPC channel: nothing should outlive it.
process.on('disconnect', () => process.exit(0));
