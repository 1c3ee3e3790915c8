import { createServer, type Server } from 'node:net';

/** Where a server listens: a host name or IP address and a TCP port. */
export interface Address {
  host: string;
  port: number;
}

/**
 * Asks the OS for one free TCP port on 127.0.0.1 per name. All listeners stay open until every port is known, so
 * the OS cannot hand out the same port twice; another program could still take one before our component binds it.
 */
export async function freePorts<Name extends string>(names: readonly Name[]): Promise<Record<Name, number>> {
  const servers: Server[] = [];
  try {
    for (const _ of names) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
    }
    const ports = servers.map((server) => (server.address() as { port: number }).port);
    return Object.fromEntries(names.map((name, i) => [name, ports[i]])) as Record<Name, number>;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
