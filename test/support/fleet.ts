/**
 * Options of a fleet server for in-process tests: on 127.0.0.1 and a free port, with a fresh encryption key unless
 * one is given (replicas of one database must share theirs).
 */
import { randomBytes } from 'node:crypto';
import type { FleetServerOptions } from '../../src/server/server.ts';
import { SecretBox } from '../../src/store/secret-box.ts';

export function testServerOptions(
  required: Pick<FleetServerOptions, 'databaseUrl' | 'cacheDir' | 'log'>,
  overrides: Partial<FleetServerOptions> = {},
): FleetServerOptions {
  return { host: '127.0.0.1', port: 0, version: '0.0.0-test', box: new SecretBox(randomBytes(32)), ...required, ...overrides };
}
