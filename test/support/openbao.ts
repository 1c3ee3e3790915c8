/**
 * A real OpenBao server (`bao`, built from its Go module by setup) in dev mode on a free 127.0.0.1 port: in memory,
 * unsealed, with a KV version 2 engine at `secret/` and a random root token, for the tests of the `vault` vars
 * source. Tests write secrets through its HTTP API as root.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { start } from '../../src/exec.ts';
import { freePorts } from '../../src/ports.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { stop } from './chart-server.ts';

export interface TestOpenBao {
  /** `http://127.0.0.1:<port>`, a `vault` source's address. */
  address: string;
  /** The root token (32 hex characters, new for every server). */
  rootToken: string;
  /**
   * Calls `<address>/v1/<apiPath>` as root, with `body` as JSON and `namespace` as X-Vault-Namespace.
   * @throws Error with the status and body of a non-2xx answer.
   */
  api(method: 'GET' | 'POST' | 'PUT' | 'DELETE', apiPath: string, body?: unknown, namespace?: string): Promise<unknown>;
  /** SIGTERM, then removes its log folder. */
  close(): Promise<void>;
}

/** Starts `bao server -dev` and resolves once /v1/sys/health says it is initialized, unsealed and active. */
export async function startOpenBao(): Promise<TestOpenBao> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-openbao-'));
  const port = await portWithFreeNext();
  const rootToken = randomBytes(16).toString('hex');
  const logFile = path.join(scratch, 'bao.log');
  const log = await open(logFile, 'a');
  // -dev-no-store-token: the dev server would otherwise write its token to ~/.vault-token.
  const child: ChildProcess = start(
    'bao',
    ['server', '-dev', `-dev-root-token-id=${rootToken}`, `-dev-listen-address=127.0.0.1:${port}`, '-dev-no-store-token'],
    { logFd: log.fd, env: { HOME: scratch } },
  );
  await log.close();
  const address = `http://127.0.0.1:${port}`;
  await waitFor(
    'OpenBao active',
    async () => {
      if (child.exitCode !== null) throw new Error(`bao exited: ${await readFile(logFile, 'utf8')}`);
      return (await fetch(`${address}/v1/sys/health`).catch(() => undefined))?.status === 200;
    },
    60_000,
  );
  return {
    address,
    rootToken,
    async api(method, apiPath, body, namespace) {
      const headers: Record<string, string> = { 'x-vault-token': rootToken, 'content-type': 'application/json' };
      if (namespace) headers['x-vault-namespace'] = namespace;
      const call = async () => {
        const response = await fetch(`${address}/v1/${apiPath}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, text: await response.text() };
      };
      // A new KV version 2 mount (the dev server's secret/, or one a test adds) upgrades its storage in the
      // background and answers 400 "Upgrading from non-versioned to versioned data" until it is done.
      const { status, text } = await waitFor(
        `OpenBao's ${apiPath} to finish upgrading to KV version 2`,
        async () => {
          const answer = await call();
          return answer.status === 400 && isUpgrading(answer.text) ? false : answer;
        },
        30_000,
      );
      if (status >= 300) throw new Error(`OpenBao ${method} ${apiPath}: ${status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    },
    async close() {
      await stop(child);
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

function isUpgrading(text: string): boolean {
  return text.includes('Upgrading from non-versioned to versioned data');
}

/**
 * A free port whose successor is free too: the dev server's cluster listener takes the API port + 1, which
 * `-dev-listen-address` cannot change. Another program could still take either before bao binds them.
 */
async function portWithFreeNext(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { api } = await freePorts(['api']);
    if (await canListen(api + 1)) return api;
  }
  throw new Error('no free pair of adjacent ports on 127.0.0.1 in 20 attempts');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
