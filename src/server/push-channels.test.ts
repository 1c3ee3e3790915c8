/**
 * PushChannels' token check over real WebSockets: a socket whose token ended is closed, and one that arrives while
 * the database is still answering is left for the next check (10,000 agents connecting at once would otherwise
 * lose the sockets added in that moment, and with them their kicks).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PushChannels, TOKEN_ENDED_CLOSE_CODE } from './push-channels.ts';

describe('push channels and their deploy tokens', () => {
  let server: WebSocketServer;
  const clients: WebSocket[] = [];

  beforeAll(async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
  });

  afterAll(async () => {
    for (const client of clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A connected pair: the server's end (what PushChannels holds), the close code the client sees, and that end's close. */
  async function connection(): Promise<{ socket: WebSocket; closed: Promise<number>; gone: Promise<unknown> }> {
    const accepted = once(server, 'connection') as Promise<[WebSocket]>;
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    clients.push(client);
    const closed = new Promise<number>((resolve) => client.on('close', (code) => resolve(code)));
    const [[socket]] = await Promise.all([accepted, once(client, 'open')]);
    return { socket, closed, gone: once(socket, 'close') };
  }

  test('closes the sockets of ended tokens, and leaves a socket added during the check to the next one', async () => {
    let answer: (valid: Set<string>) => void = () => undefined;
    const asked: string[][] = [];
    const channels = new PushChannels({
      validTokens: (ids) => {
        asked.push(ids);
        return new Promise((resolve) => (answer = resolve));
      },
      onCheckError: (error) => {
        throw error;
      },
    });
    try {
      const ended = await connection();
      const kept = await connection();
      channels.add('cluster-a', 'token-ended', ended.socket);
      channels.add('cluster-a', 'token-kept', kept.socket);
      const check = channels.checkTokens();
      const late = await connection();
      channels.add('cluster-b', 'token-late', late.socket);
      answer(new Set(['token-kept']));
      await check;
      expect(asked).toEqual([['token-ended', 'token-kept']]);
      expect(await ended.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
      expect(late.socket.readyState).toBe(WebSocket.OPEN);
      expect(kept.socket.readyState).toBe(WebSocket.OPEN);

      // The next check asks about it (and no longer about the closed one).
      await ended.gone;
      const next = channels.checkTokens();
      answer(new Set());
      await next;
      expect(asked[1]?.sort()).toEqual(['token-kept', 'token-late']);
      expect(await late.closed).toBe(TOKEN_ENDED_CLOSE_CODE);
    } finally {
      channels.close();
    }
  });
});
