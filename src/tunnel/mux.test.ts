/**
 * The tunnel's multiplexing over a real WebSocket pair on 127.0.0.1: exchanges in both directions, a reset from
 * either side, the socket closing under open streams, and flow control holding back only the stream whose reader
 * stopped.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { STREAM_WINDOW, TunnelMux, type TunnelRequest, type TunnelStream } from './mux.ts';

describe('TunnelMux', () => {
  let wss: WebSocketServer;
  let server: TunnelMux;
  let agentSocket: WebSocket;
  const opened: Array<{ stream: TunnelStream; request: TunnelRequest }> = [];

  beforeEach(async () => {
    opened.length = 0;
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(wss, 'listening');
    const accepted = once(wss, 'connection');
    agentSocket = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    new TunnelMux(agentSocket, (stream, request) => opened.push({ stream, request }));
    const [socket] = (await accepted) as [WebSocket];
    server = new TunnelMux(socket);
    await once(agentSocket, 'open');
  });

  afterEach(async () => {
    agentSocket.close();
    await new Promise((resolve) => wss.close(resolve));
  });

  const request = (path: string): TunnelRequest => ({
    method: 'POST',
    path,
    headers: { 'content-type': 'text/plain' },
    user: 'dana',
    groups: ['gantry:reader'],
  });
  const nextOpened = async (count: number) => {
    while (opened.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
    return opened[count - 1]!;
  };

  test('carries a request body one way and the head and body back', async () => {
    const stream = server.open(request('/api/v1/echo'));
    stream.end('ping');
    const agent = await nextOpened(1);
    expect(agent.request).toEqual(request('/api/v1/echo'));
    expect(await text(agent.stream)).toBe('ping');
    agent.stream.respond({ status: 201, headers: { 'x-answer': 'yes' } });
    agent.stream.end('pong');
    expect(await stream.head).toEqual({ status: 201, headers: { 'x-answer': 'yes' } });
    expect(await text(stream)).toBe('pong');
    await waitUntil(() => server.size === 0);
  });

  test('a reset on one side destroys the stream on the other, naming why', async () => {
    const stream = server.open(request('/watch'));
    const agent = await nextOpened(1);
    stream.destroy(new Error('the caller went away'));
    await closed(agent.stream);
    expect(agent.stream.errored?.message).toBe('tunnel stream reset by the peer: the caller went away');
  });

  test('the socket closing fails every open stream, before and after its head', async () => {
    const waiting = server.open(request('/a'));
    const answered = server.open(request('/b'));
    (await nextOpened(2)).stream.respond({ status: 200, headers: {} });
    await answered.head;
    agentSocket.terminate();
    await expect(waiting.head).rejects.toThrow('the agent tunnel closed');
    await closed(answered);
    expect(answered.errored?.message).toBe('the agent tunnel closed');
  });

  test('a reader that stops holds back its own stream at the window, while another stream goes on', async () => {
    const slow = server.open(request('/slow'));
    const fast = server.open(request('/fast'));
    const agentSlow = (await nextOpened(1)).stream;
    const agentFast = (await nextOpened(2)).stream;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let written = 0;
    const writeMore = () => {
      while (written < 4 * STREAM_WINDOW && agentSlow.write(chunk)) written += chunk.length;
    };
    agentSlow.on('drain', () => {
      written += chunk.length;
      writeMore();
    });
    writeMore();
    agentFast.end('through');
    expect(await text(fast)).toBe('through');
    // Nobody reads `slow`: what arrived is at most the window plus what its readable buffer takes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(slow.readableLength).toBeLessThanOrEqual(STREAM_WINDOW + slow.readableHighWaterMark);
    expect(written).toBeLessThan(4 * STREAM_WINDOW);
    let read = 0;
    slow.on('data', (data: Buffer) => (read += data.length));
    await waitUntil(() => written >= 4 * STREAM_WINDOW);
    agentSlow.end();
    await once(slow, 'end');
    expect(read).toBe(written);
  });
});

/** Resolves on 'close' (events.once would reject on the 'error' that comes first). */
function closed(stream: TunnelStream): Promise<void> {
  return stream.closed ? Promise.resolve() : new Promise((resolve) => stream.once('close', () => resolve()));
}

async function waitUntil(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
