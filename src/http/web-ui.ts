/**
 * The web UI: the files the setup builds into web/dist (scripts/setup/web.ts), served at `/`. The UI routes in the
 * browser, so any other GET outside the API, the webhooks and the probes answers index.html and the app shows the
 * page its URL names. When web/dist was never built the UI's paths answer 503 saying how to build it; the API
 * works either way.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyRequest } from 'fastify';

const WEB_DIST = fileURLToPath(new URL('../../web/dist', import.meta.url));

/**
 * Paths the fallback leaves alone: the API's, the webhooks' and the probes' keep their JSON 404s, and an asset that
 * is not there is a 404 rather than the page.
 */
const SERVER_PATHS = /^\/(v1|hooks|assets)(\/|$)|^\/(healthz|readyz|metrics)$/;

export async function registerWebUi(app: FastifyInstance, dist = WEB_DIST): Promise<void> {
  if (!existsSync(join(dist, 'index.html'))) {
    app.get('/*', { schema: { hide: true } }, async (request, reply) => {
      if (isServerPath(request)) return reply.callNotFound();
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send(`The Gantry web UI is not built (${dist} has no index.html). Run the setup, sh scripts/setup.sh, which builds it.\n`);
    });
    return;
  }
  // wildcard false: a route per file found now, so this route's fallback below gets every other path.
  await app.register(fastifyStatic, {
    root: dist,
    wildcard: false,
    index: false,
    serveDotFiles: false,
    // Vite names assets by their content hash, so a browser may keep them for good.
    setHeaders: (reply, path) => {
      if (path.startsWith(join(dist, 'assets'))) void reply.header('cache-control', 'public, max-age=31536000, immutable');
    },
  });
  // index.html goes with max-age=0 and an ETag: it names the current build's assets, so browsers revalidate it.
  app.get('/*', { schema: { hide: true } }, async (request, reply) =>
    isServerPath(request) ? reply.callNotFound() : reply.sendFile('index.html'),
  );
}

function isServerPath(request: FastifyRequest): boolean {
  return SERVER_PATHS.test(request.url.split('?')[0] ?? '');
}
