/** The agent's probes: alive at once, ready only once a ping reached the server (what the Deployment's rollout waits for). */
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { serveHealth } from './health-server.ts';

test('/readyz answers 503 until a ping reached the server, then 200; /healthz 200 throughout; anything else 404', async () => {
  const state: { pingedAt: number | undefined } = { pingedAt: undefined };
  const server = await serveHealth({ host: '127.0.0.1', port: 0 }, state);
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const status = async (path: string) => (await fetch(`${base}${path}`)).status;
    expect(await status('/healthz')).toBe(200);
    expect(await status('/readyz')).toBe(503);
    expect(await (await fetch(`${base}/readyz`)).text()).toBe('no ping has reached the server yet\n');
    state.pingedAt = Date.now();
    expect(await status('/readyz?verbose')).toBe(200);
    expect(await status('/metrics')).toBe(404);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an address already taken is an error, not a silent agent without probes', async () => {
  const first = await serveHealth({ host: '127.0.0.1', port: 0 }, { pingedAt: undefined });
  try {
    const port = (first.address() as AddressInfo).port;
    await expect(serveHealth({ host: '127.0.0.1', port }, { pingedAt: undefined })).rejects.toThrow(/EADDRINUSE/);
  } finally {
    await new Promise((resolve) => first.close(resolve));
  }
});
