/**
 * A real HTTP server on 127.0.0.1 for tests (the http vars source, alert receivers, Flux artifacts): fixed
 * responses per path, looked up at each request so a test can change them, and a record of every request.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Route {
  status?: number;
  body: string | Uint8Array;
  contentType?: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface TestHttpServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/** Serves `routes` (path → response); any other path is a 404. */
export async function startHttpServer(routes: Record<string, Route>): Promise<TestHttpServer> {
  const received: ReceivedRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      received.push({ method: request.method ?? '', path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const route = routes[path];
      response.writeHead(route?.status ?? (route ? 200 : 404), { 'content-type': route?.contentType ?? 'text/plain' });
      response.end(route?.body ?? 'not found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
