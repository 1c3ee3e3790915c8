/**
 * A chart repository on an address the server may reach cannot send it elsewhere: its index.yaml's chart URLs and
 * its redirects are connections of their own, each checked as it is made (outbound.ts outboundDispatcher), and the
 * server downloads the chart itself instead of leaving it to `helm pull`, whose connections escape the check.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { capturedLogger } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** An HTTP server on `host` answering `route(path)`, recording the paths it was asked for. */
async function listen(host: string, route: (url: string) => Answer) {
  const asked: string[] = [];
  const server: Server = createServer((request, response) => {
    asked.push(request.url ?? '');
    const { status, headers = {}, body = '' } = route(request.url ?? '');
    response.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, asked, port: (server.address() as AddressInfo).port };
}

describe("chart fetches go only where the server's outbound policy lets them", () => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repository: Awaited<ReturnType<typeof listen>>;
  /** Listens on ::1, which the policy refuses: it must never be asked for anything. */
  let elsewhere: Awaited<ReturnType<typeof listen>>;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    elsewhere = await listen('::1', () => ({ status: 200, body: 'a file the server must not read' }));
    const index = [
      'apiVersion: v1',
      'entries:',
      '  listed-elsewhere:',
      '    - {name: listed-elsewhere, version: 1.0.0, urls: ["http://[::1]:PORT/chart.tgz"]}',
      '  metadata:',
      '    - {name: metadata, version: 1.0.0, urls: ["http://169.254.169.254/latest/meta-data"]}',
      '  redirected:',
      '    - {name: redirected, version: 1.0.0, urls: ["redirected-1.0.0.tgz"]}',
      '',
    ]
      .join('\n')
      .replace('PORT', String(elsewhere.port));
    const away = `http://[::1]:${elsewhere.port}`;
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.cncf.helm.config.v1+json', digest: `sha256:${'0'.repeat(64)}`, size: 2 },
      layers: [{ mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', digest: `sha256:${'1'.repeat(64)}`, size: 10 }],
    });
    // A Helm repository under /charts, and an OCI registry (/v2/charts/…) whose blob of `moved` is redirected away
    // and whose `guarded` asks for a token from the cloud's metadata address.
    repository = await listen('127.0.0.1', (url): Answer => {
      if (url === '/charts/index.yaml') return { status: 200, headers: { 'content-type': 'text/yaml' }, body: index };
      if (url.startsWith('/v2/charts/moved/tags/list')) return { status: 200, body: JSON.stringify({ tags: ['1.0.0'] }) };
      if (url === '/v2/charts/moved/manifests/1.0.0')
        return { status: 200, headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }, body: manifest };
      if (url.startsWith('/v2/charts/guarded/'))
        return { status: 401, headers: { 'www-authenticate': 'Bearer realm="http://169.254.169.254/token",service="r"' } };
      return { status: 302, headers: { location: `${away}/from-a-redirect` } };
    });
    database = await createTestDatabase('sqlite');
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-chart-egress-'));
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }, { outboundAllow: ['127.0.0.1/32'] }));
    expect((await apiCall(server, 'POST', '/v1/clusters', server.adminToken!, { name: 'dev' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
    for (const { server: http } of [repository, elsewhere]) http?.close();
  });

  test.each([
    ['http', 'listed-elsewhere', 'version', '::1'],
    ['http', 'metadata', 'version', '169.254.169.254'],
    ['http', 'redirected', 'version', '::1'],
    ['oci', 'moved', 'version', '::1'],
    ['oci', 'guarded', 'url', '169.254.169.254'],
  ])('a %s chart %s is refused on body.helm.%s naming %s, and nothing there is asked for', async (scheme, chart, field, address) => {
    const helm = { url: `${scheme}://127.0.0.1:${repository.port}/charts`, chart, version: '1.0.0' };
    const created = await apiCall(server, 'POST', '/v1/clusters/dev/services', server.adminToken!, { name: chart, namespace: 'n', helm });
    expect(created).toMatchObject({
      status: 400,
      body: { field: `body.helm.${field}`, message: expect.stringContaining('special address') },
    });
    expect(created.body.message).toContain(address);
    expect(repository.asked.length).toBeGreaterThan(0);
    expect(elsewhere.asked).toEqual([]);
  });
});
