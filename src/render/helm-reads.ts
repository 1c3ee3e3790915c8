/**
 * The API server as Helm sees it while it renders charts against a cluster: a local endpoint on 127.0.0.1 that
 * forwards Helm's requests with the cluster's credentials (kube/api-forwarder.ts) and records what Helm read
 * (RenderInputs), because `lookup` and Helm's discovery make a chart's output depend on cluster state that Gantry
 * does not see otherwise. Helm's server dry run only reads; any other request is still forwarded, but makes the
 * render not reusable. A random path prefix known only to this process and Helm keeps other local programs from
 * borrowing the credentials (Helm sends no bearer token over plain HTTP, but keeps a server URL's path).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiServerForwarder, type ApiServerForwarder } from '../kube/api-forwarder.ts';
import { readDigest, type RenderInputs } from '../project/render-inputs.ts';

/** The one context of the proxy's kubeconfig. */
export const HELM_READS_CONTEXT = 'gantry';

export interface HelmReadsProxy {
  /** A kubeconfig for Helm whose one context, HELM_READS_CONTEXT, is this proxy. */
  kubeconfig: string;
  close(): Promise<void>;
}

/**
 * Starts the proxy for the cluster `kubeConfig`'s current context names.
 * @throws Error when the kubeconfig has no current cluster, or no local port can be had.
 */
export async function startHelmReadsProxy(kubeConfig: KubeConfig, inputs: RenderInputs): Promise<HelmReadsProxy> {
  const forwarder = await apiServerForwarder(kubeConfig, undefined, 'gantry (for helm)');
  const token = randomBytes(24).toString('hex');
  const prefix = `/${token}`;
  const server = createServer((request, response) => {
    const url = request.url ?? '';
    if (!url.startsWith(`${prefix}/`)) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","apiVersion":"v1","code":401}');
      return;
    }
    void forwardRecorded(request, url.slice(prefix.length), response, forwarder, inputs);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    kubeconfig: helmKubeconfig(`http://127.0.0.1:${port}${prefix}`),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await forwarder.close();
    },
  };
}

/** Forwards one request; a GET's answer is kept whole, to be recorded once it ended. */
async function forwardRecorded(
  request: IncomingMessage,
  path: string,
  response: ServerResponse,
  forwarder: ApiServerForwarder,
  inputs: RenderInputs,
): Promise<void> {
  const method = request.method ?? 'GET';
  const accept = request.headers.accept ?? '';
  // A plain body, so that its digest is the JSON's, whatever compression Helm would accept.
  const headers = { ...request.headers, 'accept-encoding': 'identity' };
  const abort = new AbortController();
  response.once('close', () => abort.abort(new Error('helm went away')));
  let status = 0;
  let contentType = '';
  const chunks: Buffer[] = [];
  const body = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      response.write(chunk, () => done());
    },
    final(done) {
      response.end(() => done());
    },
  });
  const respond = (code: number, answerHeaders: Record<string, string | string[]>) => {
    status = code;
    contentType = String(answerHeaders['content-type'] ?? '');
    response.writeHead(code, answerHeaders);
  };
  await forwarder.forward({ method, path, headers, body: request }, { respond, body }, abort.signal);
  recordAnswer(inputs, { method, path, accept }, status, contentType, Buffer.concat(chunks));
}

/** What a render's reuse needs of one answer: its digest, or why no later run could compare it. */
function recordAnswer(
  inputs: RenderInputs,
  request: { method: string; path: string; accept: string },
  status: number,
  contentType: string,
  body: Buffer,
): void {
  const { method, path, accept } = request;
  const shown = path.split('?')[0];
  if (method !== 'GET') return inputs.cannotReuse(`helm sent ${method} ${shown}`);
  if (status >= 300) return inputs.recordRead({ path, accept, digest: readDigest(status, undefined) });
  try {
    if (!contentType.startsWith('application/json')) throw new Error(contentType);
    inputs.recordRead({ path, accept, digest: readDigest(status, JSON.parse(body.toString('utf8'))) });
  } catch {
    inputs.cannotReuse(`helm's read of ${shown} was not JSON`);
  }
}

function helmKubeconfig(server: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'gantry', cluster: { server } }],
    users: [{ name: 'gantry', user: {} }],
    contexts: [{ name: HELM_READS_CONTEXT, context: { cluster: 'gantry', user: 'gantry' } }],
    'current-context': HELM_READS_CONTEXT,
  });
}
