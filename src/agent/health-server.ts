/**
 * The agent's probes (`gantry agent run --health-addr`): GET /healthz answers 200 while the process runs; GET /readyz
 * answers 200 once a ping has reached the server, 503 before. The install's Deployment rolls with a readiness probe
 * on /readyz and maxUnavailable 0, so a new agent that cannot start or cannot reach the server never replaces the one
 * running, which an agents' rollout then rolls back to (server/kept-agents.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AgentState } from './agent-state.ts';

/**
 * Listens on `address` for the probes of the agent whose state is `state`.
 * @returns the server, listening; close it when the agent stops.
 * @throws Error when the address cannot be listened on (taken, not local).
 */
export async function serveHealth(address: { host: string; port: number }, state: Pick<AgentState, 'pingedAt'>): Promise<Server> {
  const server = createServer((request, response) => {
    const path = request.url?.split('?')[0];
    const ready = state.pingedAt !== undefined;
    const [status, body] =
      path === '/healthz'
        ? [200, 'ok']
        : path === '/readyz'
          ? ready
            ? [200, 'ok']
            : [503, 'no ping has reached the server yet']
          : [404, 'not found'];
    response.writeHead(status, { 'content-type': 'text/plain' }).end(`${body}\n`);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(address.port, address.host, resolve));
  return server;
}
