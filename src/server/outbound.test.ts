import { createServer, connect, type AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { addressAllowed, checkedAddresses, OutboundRefusedError, outboundLookup } from './outbound.ts';

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

  test('a socket given outboundLookup connects only to a checked address', async () => {
    const listener = createServer((socket) => socket.end('hello'));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as AddressInfo).port;
    const attempt = (allow: string[]) =>
      new Promise<string>((resolve) => {
        const socket = connect({ host: 'localhost', port, family: 4, lookup: outboundLookup({ allow }) });
        socket.on('data', (data) => resolve(data.toString()));
        socket.on('error', (error) => resolve(error.message));
      });
    try {
      expect(await attempt([])).toMatch(/localhost resolves to 127\.0\.0\.1, which is a special address/);
      expect(await attempt(['127.0.0.0/8'])).toBe('hello');
    } finally {
      listener.close();
    }
  });
});
