/** The agent's probes, which `gantry agent run` serves once the server took its token (what the Deployment's rollout waits for). */
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { serveHealth } from './health-server.ts';

test('/healthz and /readyz answer 200, anything else 404', async () => {
  const server = await serveHealth({ host: '127.0.0.1', port: 0 });
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const status = async (path: string) => (await fetch(`${base}${path}`)).status;
    expect([await status('/healthz'), await status('/readyz?verbose'), await status('/metrics')]).toEqual([200, 200, 404]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an address already taken is an error, not a silent agent without probes', async () => {
  const first = await serveHealth({ host: '127.0.0.1', port: 0 });
  try {
    const port = (first.address() as AddressInfo).port;
    await expect(serveHealth({ host: '127.0.0.1', port })).rejects.toThrow(/EADDRINUSE/);
  } finally {
    await new Promise((resolve) => first.close(resolve));
  }
});
