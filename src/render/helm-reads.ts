/**
 * The API server as Helm sees it while it renders charts against a cluster: a local endpoint on 127.0.0.1 that
 * forwards Helm's requests with the cluster's credentials (kube/api-forwarder.ts) and records what Helm read
 * (RenderInputs), because `lookup` and Helm's discovery make a chart's output depend on cluster state that Gantry
 * does not see otherwise. Helm's server dry run only reads; any other request is still forwarded, but makes the
 * render not reusable.
 *
 * Each chart's Helm gets a session: a kubeconfig whose server URL carries a random path prefix of its own, known
 * only to this process and that Helm (Helm sends no bearer token over plain HTTP, but keeps a server URL's path), so
 * no other local program can borrow the credentials, and each read is known to come from one chart.
 *
 * After rendering, Helm's install checks whether each object of the chart (hooks aside) already exists, GETting it
 * once (Helm's requireAdoption). Those answers cannot change the output, but would keep the first render after a
 * deploy from ever being reused (the objects did not exist before). So the last GET of each such object in a
 * chart's session is not recorded; an earlier GET of it (a `lookup` while rendering) still is. CustomResourceDefinitions
 * are always recorded: those of a chart's crds/ folder are installed apart, without that check.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiServerForwarder, type ApiServerForwarder } from '../kube/api-forwarder.ts';
import type { ApiResource } from '../kube/discovery.ts';
import { splitApiVersion, type KubeObject } from '../kube/object.ts';
import { readDigest, type KubeRead, type RenderInputs } from '../project/render-inputs.ts';

/** The one context of a session's kubeconfig. */
export const HELM_READS_CONTEXT = 'gantry';

export interface HelmReadsProxy {
  /** A new session for one run of Helm. */
  session(): Promise<HelmReadsSession>;
  close(): Promise<void>;
}

export interface HelmReadsSession {
  /** The kubeconfig file for Helm (`--kubeconfig`), whose one context, HELM_READS_CONTEXT, is this session. */
  kubeconfig: string;
  /**
   * Records the session's reads once all are answered, but for Helm's check of `objects` (the chart's output;
   * `namespace`: the release's).
   */
  finish(objects: readonly KubeObject[], namespace: string): Promise<void>;
}

/** One session's requests, in the order they came, each with its answer once it ended. */
interface Session {
  answered: Array<Answered | undefined>;
  pending: Set<Promise<void>>;
}

/** What a request was answered: a read to record, or why it cannot be compared later. */
interface Answered {
  method: string;
  read: KubeRead | undefined;
  /** Why the answer cannot be compared later; undefined when `read` holds it. */
  problem: string | undefined;
}

/**
 * Starts the proxy for the cluster `kubeConfig`'s current context names; session kubeconfigs are written to `dir`.
 * @param resources the cluster's kinds, to know the path Helm GETs each object at.
 * @throws Error when the kubeconfig has no current cluster, or no local port can be had.
 */
export async function startHelmReadsProxy(
  kubeConfig: KubeConfig,
  inputs: RenderInputs,
  dir: string,
  resources: readonly ApiResource[],
): Promise<HelmReadsProxy> {
  const forwarder = await apiServerForwarder(kubeConfig, undefined, 'gantry (for helm)');
  const sessions = new Map<string, Session>();
  const server = createServer((request, response) => {
    const [, prefix = '', ...rest] = (request.url ?? '').split('/');
    const session = sessions.get(prefix);
    if (!session) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","apiVersion":"v1","code":401}');
      return;
    }
    const index = session.answered.push(undefined) - 1;
    const answering = forwardRecorded(request, `/${rest.join('/')}`, response, forwarder).then((answer) => {
      session.answered[index] = answer;
      session.pending.delete(answering);
    });
    session.pending.add(answering);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    async session() {
      const prefix = randomBytes(24).toString('hex');
      const session: Session = { answered: [], pending: new Set() };
      sessions.set(prefix, session);
      const kubeconfig = path.join(dir, `helm-kubeconfig-${prefix.slice(0, 8)}`);
      await writeFile(kubeconfig, helmKubeconfig(`http://127.0.0.1:${port}/${prefix}`), { mode: 0o600 });
      return {
        kubeconfig,
        finish: async (objects, namespace) => {
          await Promise.all(session.pending);
          sessions.delete(prefix);
          recordSession(session.answered, adoptionChecks(objects, namespace, resources), inputs);
        },
      };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await forwarder.close();
    },
  };
}

/** Records a session's answers, but for the last GET of each path in `checked`. */
function recordSession(answered: ReadonlyArray<Answered | undefined>, checked: ReadonlySet<string>, inputs: RenderInputs): void {
  const lastCheck = new Map<string, number>();
  answered.forEach((answer, index) => {
    const bare = answer?.read?.path.split('?')[0] ?? '';
    if (answer?.method === 'GET' && checked.has(bare)) lastCheck.set(bare, index);
  });
  const skipped = new Set(lastCheck.values());
  answered.forEach((answer, index) => {
    if (skipped.has(index) || !answer) return;
    if (answer.read) inputs.recordRead(answer.read);
    else inputs.cannotReuse(answer.problem as string);
  });
}

/**
 * The paths Helm GETs to check whether `objects` exist before an install: every object but hooks and
 * CustomResourceDefinitions, at its kind's path (in `namespace` unless it names one). Objects of kinds the cluster
 * does not serve are left out: their GET, if any, stays recorded.
 */
function adoptionChecks(objects: readonly KubeObject[], namespace: string, resources: readonly ApiResource[]): Set<string> {
  const paths = new Set<string>();
  for (const object of objects) {
    if (object.kind === 'CustomResourceDefinition' || object.metadata.annotations?.['helm.sh/hook'] !== undefined) continue;
    const { group, version } = splitApiVersion(object.apiVersion);
    const resource = resources.find((entry) => entry.group === group && entry.version === version && entry.kind === object.kind);
    if (!resource) continue;
    const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const scope = resource.namespaced ? `/namespaces/${object.metadata.namespace ?? namespace}` : '';
    paths.add(`${base}${scope}/${resource.resource}/${object.metadata.name}`);
  }
  return paths;
}

/** Forwards one request; a GET's answer is kept whole, for its digest. */
async function forwardRecorded(
  request: IncomingMessage,
  path: string,
  response: ServerResponse,
  forwarder: ApiServerForwarder,
): Promise<Answered> {
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
  return answerOf({ method, path, accept }, status, contentType, Buffer.concat(chunks));
}

/** What a render's reuse needs of one answer: its digest, or why no later run could compare it. */
function answerOf(request: { method: string; path: string; accept: string }, status: number, contentType: string, body: Buffer): Answered {
  const { method, path, accept } = request;
  const shown = path.split('?')[0];
  if (method !== 'GET') return { method, read: undefined, problem: `helm sent ${method} ${shown}` };
  if (status >= 300) return { method, read: { path, accept, digest: readDigest(status, undefined) }, problem: undefined };
  try {
    if (!contentType.startsWith('application/json')) throw new Error(contentType);
    return { method, read: { path, accept, digest: readDigest(status, JSON.parse(body.toString('utf8'))) }, problem: undefined };
  } catch {
    return { method, read: undefined, problem: `helm's read of ${shown} was not JSON` };
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
