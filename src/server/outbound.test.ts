import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { addressAllowed, checkedAddresses, outboundDispatcher, OutboundRefusedError } from './outbound.ts';

const none = { allow: [] };

describe('outbound addresses', () => {
  test('special addresses are refused, ordinary and private ones pass, the allow-list lets named ranges through', () => {
    for (const address of [
      '127.0.0.1',
      '169.254.169.254',
      '100.100.100.200',
      '0.0.0.0',
      '::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ])
      expect([address, addressAllowed(address, none)]).toEqual([address, false]);
    for (const address of ['93.184.215.14', '10.0.0.1', '192.168.1.1', '2606:4700::1111'])
      expect([address, addressAllowed(address, none)]).toEqual([address, true]);
    expect(addressAllowed('127.0.0.1', { allow: ['127.0.0.0/8'] })).toBe(true);
    expect(addressAllowed('169.254.169.254', { allow: ['127.0.0.0/8'] })).toBe(false);
  });

  test('every address a name resolves to is checked: localhost is refused naming what it resolved to', async () => {
    await expect(checkedAddresses('localhost', none)).rejects.toThrow(OutboundRefusedError);
    await expect(checkedAddresses('localhost', none)).rejects.toThrow(/localhost resolves to (127\.0\.0\.1|::1)/);
    expect((await checkedAddresses('localhost', { allow: ['127.0.0.0/8', '::1/128'] })).length).toBeGreaterThan(0);
  });
});

describe('the outbound dispatcher checks each connection as it is made', () => {
  let server: Server;
  let port = 0;
  /** Paths the server was asked for. */
  const asked: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      asked.push(request.url ?? '');
      if (request.url === '/away') return void response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
      response.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** The cause fetch failed with, or 'connected'. */
  async function outcome(url: string, allow: string[]): Promise<unknown> {
    const dispatcher = outboundDispatcher({ allow });
    try {
      const response = await fetch(url, { dispatcher });
      await response.text();
      return `connected ${response.status}`;
    } catch (error) {
      return (error as Error).cause;
    } finally {
      await dispatcher.close();
    }
  }

  test('an IP literal and a name resolving to a refused address never connect; an allowed one does', async () => {
    expect(await outcome(`http://127.0.0.1:${port}/literal`, [])).toBeInstanceOf(OutboundRefusedError);
    expect(await outcome(`http://localhost:${port}/name`, [])).toEqual(expect.objectContaining({ host: 'localhost' }));
    expect(await outcome(`http://[::ffff:127.0.0.1]:${port}/mapped`, [])).toBeInstanceOf(OutboundRefusedError);
    expect(asked).toEqual([]);
    expect(await outcome(`http://127.0.0.1:${port}/allowed`, ['127.0.0.1/32'])).toBe('connected 200');
    expect(asked).toEqual(['/allowed']);
  });

  test("a redirect to a refused address is refused at the redirect's connection", async () => {
    const refused = await outcome(`http://127.0.0.1:${port}/away`, ['127.0.0.1/32']);
    expect(refused).toBeInstanceOf(OutboundRefusedError);
    expect((refused as OutboundRefusedError).address).toBe('169.254.169.254');
  });
});
