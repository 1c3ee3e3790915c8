/**
 * The web UI's serving: files of the build, index.html for the UI's own paths, the API's JSON 404s untouched, and a
 * 503 saying how to build it when there is no build.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fastify, type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { registerErrorHandlers } from './errors.ts';
import { registerWebUi } from './web-ui.ts';

describe('the web UI', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-web-ui-'));
    await mkdir(path.join(dir, 'dist', 'assets'), { recursive: true });
    await writeFile(path.join(dir, 'dist', 'index.html'), '<!doctype html><title>Gantry</title>');
    await writeFile(path.join(dir, 'dist', 'assets', 'index-abc.js'), 'console.log(1)');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function appServing(dist: string): Promise<FastifyInstance> {
    const app = fastify();
    registerErrorHandlers(app);
    app.get('/v1/clusters', async () => []);
    await registerWebUi(app, dist);
    return app;
  }

  test('serves the build, index.html for the UI paths, and leaves the API, probes and missing assets their 404s', async () => {
    const app = await appServing(path.join(dir, 'dist'));
    const get = (url: string) => app.inject({ method: 'GET', url });
    for (const url of ['/', '/fleet', '/fleet/dev/web/revisions?object=x', '/pipelines/release']) {
      const page = await get(url);
      expect([url, page.statusCode, page.headers['content-type']]).toEqual([url, 200, 'text/html; charset=utf-8']);
      expect(page.body).toContain('<title>Gantry</title>');
    }
    const asset = await get('/assets/index-abc.js');
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await get('/v1/clusters')).json()).toEqual([]);
    for (const url of ['/v1/nothing', '/v1', '/hooks/nothing', '/assets/gone.js', '/healthz']) {
      const missing = await get(url);
      expect([url, missing.statusCode, missing.headers['content-type']]).toEqual([url, 404, 'application/json; charset=utf-8']);
    }
    await app.close();
  });

  test('answers 503 naming the setup when the UI was never built; the API still answers', async () => {
    const app = await appServing(path.join(dir, 'never-built'));
    const page = await app.inject({ method: 'GET', url: '/fleet' });
    expect(page.statusCode).toBe(503);
    expect(page.body).toContain('sh scripts/setup.sh');
    expect((await app.inject({ method: 'GET', url: '/v1/clusters' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/nothing' })).statusCode).toBe(404);
    await app.close();
  });
});
