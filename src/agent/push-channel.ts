/**
 * The agent's end of the push channel: a WebSocket to the server's /v1/agent/socket, reconnected with backoff
 * (1 s doubling to 30 s) whenever it drops. Each `{"kick": …}` text message wakes the poll loop; polling goes on
 * regardless, so the channel only makes changes arrive sooner. Binary messages on the same socket are the auth
 * proxy's tunnel (tunnel/mux.ts), whose streams `onProxyStream` forwards to the cluster's API server.
 */
import WebSocket from 'ws';
import type { Logger } from '../logger.ts';
import { sleep } from '../sleep.ts';
import { TunnelMux, type TunnelRequest, type TunnelStream } from '../tunnel/mux.ts';

export interface PushChannelOptions {
  server: string;
  /** The deploy token to connect with, asked at each connection. */
  token: () => string;
  /** Fires when that token is replaced: the channel closes and reconnects with the new one. */
  tokenReplaced: () => AbortSignal;
  onKick: (serviceId: string) => void;
  /** Each time the channel (re)connects: kicks sent while it was down were lost, so the agent polls. */
  onOpen: () => void;
  /** Takes each proxied request the server tunnels to this cluster. */
  onProxyStream: (stream: TunnelStream, request: TunnelRequest) => void;
  log: Logger;
  signal: AbortSignal;
}

/** Runs until `signal` fires. */
export async function runPushChannel(options: PushChannelOptions): Promise<void> {
  const url = new URL('/v1/agent/socket', options.server);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  let failures = 0;
  while (!options.signal.aborted) {
    const opened = await connectOnce(url, options);
    failures = opened ? 0 : failures + 1;
    await sleep(Math.min(30_000, 1_000 * 2 ** failures), options.signal).catch(() => undefined);
  }
}

/** Holds one connection until it closes; resolves whether it was ever open. */
function connectOnce(url: URL, options: PushChannelOptions): Promise<boolean> {
  return new Promise((resolve) => {
    let opened = false;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${options.token()}` }, handshakeTimeout: 10_000 });
    new TunnelMux(socket, options.onProxyStream);
    const stop = () => socket.close(1001, 'agent stopping');
    const replaced = options.tokenReplaced();
    const reconnect = () => socket.close(1000, 'deploy token rotated');
    options.signal.addEventListener('abort', stop, { once: true });
    replaced.addEventListener('abort', reconnect, { once: true });
    socket.on('open', () => {
      opened = true;
      options.log.info('push channel connected');
      options.onOpen();
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const message = parseMessage(String(data));
      if (message?.kick) options.onKick(message.kick);
    });
    socket.on('error', (error) => {
      if (!options.signal.aborted) options.log.warn({ error: error.message }, 'push channel error; polling continues');
    });
    socket.on('close', () => {
      options.signal.removeEventListener('abort', stop);
      replaced.removeEventListener('abort', reconnect);
      if (opened && !options.signal.aborted) options.log.warn('push channel closed; reconnecting');
      resolve(opened);
    });
  });
}

function parseMessage(text: string): { kick?: string } | undefined {
  try {
    return JSON.parse(text) as { kick?: string };
  } catch {
    return undefined;
  }
}
