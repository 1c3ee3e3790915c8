import { describe, expect, test } from 'vitest';
import { addressAllowed, checkedAddresses, OutboundRefusedError } from './outbound.ts';

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
