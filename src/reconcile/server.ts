/**
 * The controller's HTTP server (fastify): `/healthz` (the process answers), `/readyz` (every readiness check
 * passes; 503 naming the failing ones otherwise, like the API server's own /readyz), `/metrics` (Prometheus text).
 * Other modules add their routes (the webhook receiver's POST routes) through `routes`, called before the server
 * listens: fastify accepts no routes once it listens.
 */
import { fastify, LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ControllerMetrics } from './metrics.ts';
import type { Logger } from '../logger.ts';

/** A named readiness condition; `check` returns true when met. */
export interface ReadinessCheck {
  name: string;
  check: () => boolean;
}

export interface ServerOptions {
  /** Address to listen on; 127.0.0.1 unless the deployment says otherwise. */
  host: string;
  /** Port to listen on; 0 picks a free one (see ControllerServer.port). */
  port: number;
  metrics: ControllerMetrics;
  readiness: readonly ReadinessCheck[];
  log: Logger;
  /** Registers further routes on the instance before it listens. */
  routes?: (app: FastifyInstance) => void | Promise<void>;
}

export interface ControllerServer {
  app: FastifyInstance;
  /** The port actually listened on. */
  port: number;
  close(): Promise<void>;
}

const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Builds the server, adds `routes` and listens.
 * @throws Error when the address is taken or a route cannot be added.
 */
export async function startServer(options: ServerOptions): Promise<ControllerServer> {
  const app = fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    // Probes and scrapes come every few seconds; only other requests (webhooks) are worth a log line.
    logController: new LogController({ disableRequestLogging: (request) => PROBE_PATHS.has(request.url.split('?')[0] ?? '') }),
    forceCloseConnections: true,
  });
  app.get('/healthz', async () => 'ok');
  app.get('/readyz', async (_request, reply) => {
    const failing = options.readiness.filter((item) => !item.check()).map((item) => item.name);
    if (failing.length === 0) return 'ok';
    return reply.code(503).send(`not ready: ${failing.join(', ')}`);
  });
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await options.metrics.scrape();
    return reply.type(contentType).send(body);
  });
  if (options.routes) await options.routes(app);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { app, port, close: () => app.close() };
}
