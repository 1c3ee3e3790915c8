/**
 * The agent's client reads a tarball only up to its cap: a server (or what pretends to be one) sending more, with or
 * without declaring its length, is cut off there instead of filling the agent's memory.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from './agent-client.ts';

const MiB = 1024 * 1024;
const DIGEST = 'a'.repeat(64);
let server: Server;
let client: AgentClient;

beforeAll(async () => {
  server = createServer((request, response) => {
    const body = Buffer.alloc(3 * MiB);
    if (request.url?.includes('/endless/')) {
      // Chunked, without a length, for ever: only the client's cap ends it.
      response.writeHead(200, { 'x-gantry-digest': DIGEST });
      const write = (): void => void (response.destroyed || response.write(Buffer.alloc(64 * 1024), write));
      return write();
    }
    const declared = request.url?.includes('/declared/');
    response.writeHead(200, { 'x-gantry-digest': DIGEST, ...(declared ? { 'content-length': String(body.length) } : {}) });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new AgentClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't' });
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('AgentClient.tarball', () => {
  it('refuses a tarball whose declared length passes the cap, before reading it', async () => {
    await expect(client.tarball('declared/s', DIGEST, undefined, MiB)).rejects.toThrow(
      "tarball of service declared/s is larger than 1048576 bytes, the agent's limit",
    );
  });

  it('stops reading an endless tarball sent without a length once it passes the cap', async () => {
    await expect(client.tarball('endless/s', DIGEST, undefined, MiB)).rejects.toThrow(/endless\/s is larger than 1048576 bytes/);
  });

  it('reads a tarball within the cap whole', async () => {
    expect((await client.tarball('undeclared/s', DIGEST, undefined, 4 * MiB)).length).toBe(3 * MiB);
    expect((await client.tarball('declared/s', DIGEST, undefined, 4 * MiB)).length).toBe(3 * MiB);
  });
});
