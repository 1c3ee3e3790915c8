/**
 * Polling helpers for `up`: each waits for one condition, failing early when the component it waits on died,
 * and fails with a message that names the condition and the log to read.
 */
import { request } from 'node:https';
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
    if (!target.alive()) throw new Error(`cluster: ${target.what}: the process exited; see ${target.log}`);
    if (performance.now() > deadline) {
      throw new Error(`cluster: ${target.what} not ready after ${timeoutMs / 1000}s; see ${target.log}`);
    }
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
