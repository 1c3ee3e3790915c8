/**
 * Options of fleet servers and agents for in-process tests. A server: on 127.0.0.1 and a free port, with a fresh encryption key unless
 * one is given (replicas of one database must share theirs).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AgentOptions } from '../../src/agent/agent-state.ts';
import { AgentClient } from '../../src/client/agent-client.ts';
import type { ApiService, FleetClient } from '../../src/client/fleet-client.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { type FleetServer, type FleetServerOptions, startFleetServer } from '../../src/server/server.ts';
import type { DatabaseKind } from '../../src/store/database.ts';
import { createTestDatabase } from './databases.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';

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

/** A test server on a database of its own, with clusters registered. */
export interface ServerWithClusters {
  server: FleetServer;
  /** The admin's token. */
  admin: string;
  /** Each cluster's first deploy token, by name. */
  tokens: Record<string, string>;
  /** Stops the server, drops its database and removes its folder. */
  close(): Promise<void>;
}

/** Starts a server on a new `kind` database and registers `clusters` through its API. */
export async function serverWithClusters(
  kind: DatabaseKind,
  clusters: readonly string[],
  required: Pick<FleetServerOptions, 'log'>,
  overrides: Partial<FleetServerOptions> = {},
): Promise<ServerWithClusters> {
  const database = await createTestDatabase(kind);
  const dir = await mkdtemp(path.join(tmpdir(), 'gantry-server-'));
  const server = await startFleetServer(
    testServerOptions({ databaseUrl: database.url, cacheDir: path.join(dir, 'cache'), ...required }, overrides),
  );
  const admin = server.adminToken!;
  const tokens: Record<string, string> = {};
  for (const name of clusters) tokens[name] = (await apiCall(server, 'POST', '/v1/clusters', admin, { name })).body.deployToken as string;
  return {
    server,
    admin,
    tokens,
    async close() {
      await server.close();
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    },
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
 * Makes the user `name` (password `<name>-password`) as the admin, binds them as `role` within `scope`, logs them in
 * and makes an API token of theirs named `tokenName`.
 * @returns the token.
 * @throws Error naming the step the server refused.
 */
export async function userToken(
  server: { url: string; adminToken?: string | undefined },
  name: string,
  role: string,
  scope: unknown,
  tokenName = `${name}-token`,
): Promise<string> {
  const admin = server.adminToken!;
  const made = await apiCall(server, 'POST', '/v1/users', admin, { name, password: `${name}-password` });
  if (made.status !== 201) throw new Error(`making user ${name}: ${made.status} ${JSON.stringify(made.body)}`);
  const bound = await apiCall(server, 'PUT', `/v1/role-bindings/${name}`, admin, { role, subjects: [{ kind: 'user', name }], scope });
  if (bound.status !== 200) throw new Error(`binding ${name}: ${bound.status} ${JSON.stringify(bound.body)}`);
  const login = await fetch(`${server.url}/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: name, password: `${name}-password` }),
  });
  const cookie = login.headers.get('set-cookie')?.split(';')[0];
  if (!cookie) throw new Error(`logging ${name} in: ${login.status} ${await login.text()}`);
  const token = await fetch(`${server.url}/v1/me/tokens`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ name: tokenName }),
  });
  if (token.status !== 201) throw new Error(`making ${name}'s token: ${token.status} ${await token.text()}`);
  return ((await token.json()) as { token: string }).token;
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
    pushChannel: true,
    pollIntervalMs: 600_000,
    jitterMs: 0,
    resyncIntervalMs: 600_000,
    repairBackoffMs: 5_000,
    pingIntervalMs: 60_000,
    healthIntervalMs: 1_000,
    syncTimeoutMs: 60_000,
    ...rest,
    ...overrides,
  };
}

/**
 * The service once its agent applied `revision` and it has `status` (default healthy), as the server has it.
 * @throws Error after 40 s, with the service as last seen.
 */
export async function serviceSettled(
  client: FleetClient,
  cluster: string,
  name: string,
  revision: number,
  status: ApiService['status'] = 'healthy',
): Promise<ApiService> {
  let last: ApiService | undefined;
  try {
    return await waitFor(
      `service ${name} ${status} at revision ${revision}`,
      async () => {
        last = await client.getService(cluster, name);
        return last.status === status && last.appliedRevision === revision ? last : undefined;
      },
      40_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
}
