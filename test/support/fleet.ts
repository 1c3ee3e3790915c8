/**
 * Options of fleet servers and agents for in-process tests. A server: on 127.0.0.1 and a free port, with a fresh encryption key unless
 * one is given (replicas of one database must share theirs).
 */
import { randomBytes } from 'node:crypto';
import type { AgentOptions } from '../../src/agent/agent.ts';
import { AgentClient } from '../../src/client/agent-client.ts';
import type { FleetServerOptions } from '../../src/server/server.ts';
import { SecretBox } from '../../src/store/secret-box.ts';

export function testServerOptions(
  required: Pick<FleetServerOptions, 'databaseUrl' | 'cacheDir' | 'log'>,
  overrides: Partial<FleetServerOptions> = {},
): FleetServerOptions {
  // The test servers (charts, registries, git) listen on loopback, which a server refuses to fetch from unless allowed.
  const outboundAllow = ['127.0.0.0/8', '::1/128'];
  return {
    host: '127.0.0.1',
    port: 0,
    version: '0.0.0-test',
    box: new SecretBox(randomBytes(32)),
    outboundAllow,
    ...required,
    ...overrides,
  };
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

/**
 * Options of an in-process agent whose every change must arrive through the push channel: polls, resyncs and pings
 * far apart, health looked at every second. `overrides` changes any of them (a test of polling shortens the poll).
 */
export function pushedAgentOptions(
  required: { server: string; token: string } & Pick<AgentOptions, 'engine' | 'kubeConfig' | 'dataDir' | 'log'>,
  overrides: Partial<AgentOptions> = {},
): AgentOptions {
  const { server, token, ...rest } = required;
  return {
    client: new AgentClient({ server, token }),
    token,
    pushChannel: true,
    pollIntervalMs: 600_000,
    jitterMs: 0,
    resyncIntervalMs: 600_000,
    pingIntervalMs: 60_000,
    healthIntervalMs: 1_000,
    syncTimeoutMs: 60_000,
    ...rest,
    ...overrides,
  };
}
