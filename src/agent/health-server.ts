/**
 * The agent's probes (`gantry agent run --health-addr`): GET /healthz and GET /readyz answer 200. `gantry agent run`
 * listens only once the server took the agent's deploy token, so a probe before that finds nothing and the pod is not
 * ready. The install's Deployment rolls with a readiness probe on /readyz, maxUnavailable 0 and minReadySeconds, so a
 * new agent that cannot start, cannot reach the server or dies at once never replaces the one running, which an
 * agents' rollout then rolls back to (server/kept-agents.ts).
 */
import { createServer, type Server } from 'node:http';

/**
 * Listens on `address` for the probes.
 * @returns the server, listening; close it when the agent stops.
 * @throws Error when the address cannot be listened on (taken, not local).
 */
export async function serveHealth(address: { host: string; port: number }): Promise<Server> {
  const server = createServer((request, response) => {
    const known = ['/healthz', '/readyz'].includes(request.url?.split('?')[0] ?? '');
    response.writeHead(known ? 200 : 404, { 'content-type': 'text/plain' }).end(known ? 'ok\n' : 'not found\n');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(address.port, address.host, resolve));
  return server;
}
