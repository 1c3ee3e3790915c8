/**
 * TLS in front of a plain-HTTP server, as an ingress or a load balancer terminates it in front of `gantry server`:
 * a fresh self-signed certificate for 127.0.0.1, and every TLS connection piped to the server's port. kubectl sends
 * credentials only over TLS, so the auth proxy's tests reach the server through this.
 */
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { createServer, type Server } from 'node:tls';
import { once } from 'node:events';
import selfsigned from 'selfsigned';

export interface TlsFront {
  /** https://127.0.0.1:PORT */
  url: string;
  /** PEM file of the certificate, the CA to trust. */
  caFile: string;
  close(): Promise<void>;
}

/** Terminates TLS on a free port and forwards to `target` (http://127.0.0.1:PORT); writes the CA into `dir`. */
export async function startTlsFront(target: string, dir: string): Promise<TlsFront> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keyType: 'ec',
    notAfterDate: new Date(Date.now() + 2 * 86_400_000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const caFile = path.join(dir, 'front-ca.pem');
  await writeFile(caFile, pems.cert);
  const { port } = new URL(target);
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (socket) => {
    const upstream = connect(Number(port), '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const url = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    caFile,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
