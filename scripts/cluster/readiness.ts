/**
 * Polling helpers for `up`: each waits for one condition, failing early when the component it waits on died,
 * and fails with a message that names the condition and the log to read.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitTarget {
  /** What is awaited, for the error message ("kube-apiserver /readyz"). */
  what: string;
  /** Log file to point the user at when it fails. */
  log: string;
  /** False once the process being waited on has exited. */
  alive: () => boolean;
}

/**
 * Calls `probe` every 100 ms until it returns true.
 * @throws Error when `timeoutMs` passes or the target's process exits first.
 */
export async function waitUntil(target: WaitTarget, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (!target.alive()) throw new Error(`cluster: ${target.what}: the process exited; see ${target.log}${await logTail(target.log)}`);
    if (performance.now() > deadline) {
      throw new Error(`cluster: ${target.what} not ready after ${timeoutMs / 1000}s; see ${target.log}${await logTail(target.log)}`);
    }
    await sleep(100);
  }
}

/** The log's last lines, for an error that may outlive the log (a test's cluster is removed after it). */
async function logTail(log: string): Promise<string> {
  const text = await readFile(log, 'utf8').catch(() => '');
  const lines = text.trimEnd().split('\n').slice(-15);
  return lines.length > 0 && lines[0] !== '' ? `; it ended:\n${lines.join('\n')}` : '';
}

/**
 * Waits until nothing listens on 127.0.0.1:`port` any more: a killed process is gone from /proc before the kernel
 * has closed its sockets, and a successor binding the port at once would fail.
 * @throws Error when the port is still taken after `timeoutMs`.
 */
export async function untilPortFree(port: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return;
    if (performance.now() > deadline) throw new Error(`cluster: port ${port} is still in use after ${timeoutMs / 1000}s`);
    await sleep(100);
  }
}

/** Whether GET `url` answers 200 within 2 s; an https `url` is verified against `caPem` and sent `token`. */
export async function answersOk(url: string, caPem?: string, token?: string): Promise<boolean> {
  if (url.startsWith('http:')) {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return response.ok;
  }
  return await new Promise<boolean>((resolve, reject) => {
    const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
    const req = request(url, { ca: caPem, headers, timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
