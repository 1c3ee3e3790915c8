/**
 * A real git server on 127.0.0.1 for tests: git's own smart-HTTP backend (`git http-backend`, a CGI program) behind
 * a small Node HTTP server, serving every bare repository below `root`, optionally behind basic auth.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { start } from '../../src/exec.ts';

export interface GitServer {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  port: number;
  /** URL of a repository, by its path below root (e.g. `remote.git`). */
  url(repository: string): string;
  /** Number of requests served (to see that a client fetched). */
  requests(): number;
  close(): Promise<void>;
}

/**
 * Serves `root` until closed.
 * @param port to listen on; 0 (the default) takes a free one. A closed server's port serves to start it again at the
 *   same URL (a git server that was down for a while).
 * @throws Error (EADDRINUSE) when `port` is taken.
 */
export async function startGitServer(root: string, auth?: { username: string; password: string }, port = 0): Promise<GitServer> {
  let served = 0;
  const server = createServer((request, response) => {
    served++;
    if (auth && !authorized(request, auth)) {
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
      return;
    }
    serveCgi(root, request, response, auth?.username);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  const listening = (server.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${listening}`;
  return {
    baseUrl,
    port: listening,
    url: (repository) => `${baseUrl}/${repository}`,
    requests: () => served,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function authorized(request: IncomingMessage, auth: { username: string; password: string }): boolean {
  const header = request.headers.authorization ?? '';
  return header === `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
}

/** Runs git http-backend for one request, as a web server runs a CGI program. */
function serveCgi(root: string, request: IncomingMessage, response: ServerResponse, user: string | undefined): void {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const child = start('git', ['http-backend'], {
    env: {
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      REQUEST_METHOD: request.method ?? 'GET',
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: request.headers['content-encoding'] ?? '',
      HTTP_GIT_PROTOCOL: String(request.headers['git-protocol'] ?? ''),
      REMOTE_ADDR: '127.0.0.1',
      REMOTE_USER: user ?? '',
    },
  });
  request.pipe(child.stdin!);
  const chunks: Buffer[] = [];
  child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.on('close', () => {
    const output = Buffer.concat(chunks);
    const split = output.indexOf('\r\n\r\n') >= 0 ? output.indexOf('\r\n\r\n') : output.indexOf('\n\n');
    const separator = output.indexOf('\r\n\r\n') >= 0 ? 4 : 2;
    const headerText = output.subarray(0, Math.max(0, split)).toString('utf8');
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of headerText.split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
      else headers[name] = value;
    }
    response.writeHead(status, headers).end(split >= 0 ? output.subarray(split + separator) : output);
  });
}
