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

/** One call to the server's API with a bearer token: the status and the body (parsed when JSON). */
export async function apiCall(
  server: { url: string },
  method: string,
  url: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text || undefined,
  };
}
