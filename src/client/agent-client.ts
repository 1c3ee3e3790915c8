/**
 * The agent's side of the fleet API (/v1/agent), authenticated with its cluster's deploy token.
 */
import type { AgentGate, AgentPing, AgentReport, AgentService, GateReport, PingAnswer, ProvisionedAgentInstall } from '../api/agent.ts';
import type { AgentPreview, PreviewReport } from '../api/previews.ts';
import { type ApiCluster, ApiError } from './fleet-client.ts';

export interface AgentClientOptions {
  server: string;
  token: string;
  /** Per-request timeout in milliseconds (tarballs included). Default 60 s, as Plural's agent. */
  timeoutMs?: number;
}

/**
 * One method per /v1/agent endpoint, each one request sent with `Authorization: Bearer <deploy token>`, the token
 * being the one last given (useToken, after a rotation); one instance may serve concurrent calls and needs no closing. Every request ends after `timeoutMs` or `signal`.
 * @throws (each method) ApiError with the server's status and message when it answers with an error; Error saying
 *   the server cannot be reached on a network failure or timeout; the signal's reason when `signal` fired.
 */
export class AgentClient {
  readonly #options: AgentClientOptions;
  #token: string;

  constructor(options: AgentClientOptions) {
    this.#options = options;
    this.#token = options.token;
  }

  get server(): string {
    return this.#options.server;
  }

  /** The deploy token requests are sent with. */
  get token(): string {
    return this.#token;
  }

  /** Sends every later request with `token` (a rotated deploy token). */
  useToken(token: string): void {
    this.#token = token;
  }

  async cluster(signal?: AbortSignal): Promise<ApiCluster> {
    return (await this.#json('GET', '/v1/agent/cluster', undefined, signal)) as ApiCluster;
  }

  /** @returns the cluster, and whether this token is due for rotation (`rotateToken`; older servers leave it out). */
  async ping(ping: AgentPing, signal?: AbortSignal): Promise<Partial<PingAnswer>> {
    return ((await this.#json('POST', '/v1/agent/ping', ping, signal)) ?? {}) as Partial<PingAnswer>;
  }

  /** A new deploy token for this cluster. @throws ApiError 409 when this token is not due for rotation. */
  async newDeployToken(signal?: AbortSignal): Promise<string> {
    return ((await this.#json('POST', '/v1/agent/token', undefined, signal)) as { deployToken: string }).deployToken;
  }

  /**
   * What to install as the agent of `cluster`, which this (management) cluster's Cluster API made: a fresh deploy
   * token of it (earlier ones revoked), its image, and the server's public URL if it has one.
   * @throws ApiError 404 when it is no cluster this one makes, 409 when its agent already pinged.
   */
  async provisionedAgentInstall(cluster: string, signal?: AbortSignal): Promise<ProvisionedAgentInstall> {
    const path = `/v1/agent/provisioned-clusters/${encodeURIComponent(cluster)}/agent-install`;
    return (await this.#json('POST', path, undefined, signal)) as ProvisionedAgentInstall;
  }

  async services(signal?: AbortSignal): Promise<AgentService[]> {
    return (await this.#json('GET', '/v1/agent/services', undefined, signal)) as AgentService[];
  }

  /** The previews of this cluster the agent has still to run. */
  async previews(signal?: AbortSignal): Promise<AgentPreview[]> {
    return (await this.#json('GET', '/v1/agent/previews', undefined, signal)) as AgentPreview[];
  }

  async reportPreview(id: string, report: PreviewReport, signal?: AbortSignal): Promise<void> {
    await this.#json('POST', `/v1/agent/previews/${encodeURIComponent(id)}`, report, signal);
  }

  /** The JOB gates this cluster is to run. */
  async gates(signal?: AbortSignal): Promise<AgentGate[]> {
    return (await this.#json('GET', '/v1/agent/gates', undefined, signal)) as AgentGate[];
  }

  /** A JOB gate's outcome. @throws ApiError 409 when the gate moved on to a newer context (drop the Job). */
  async reportGate(report: GateReport, signal?: AbortSignal): Promise<void> {
    await this.#json('POST', '/v1/agent/gates/report', report, signal);
  }

  async report(serviceId: string, report: AgentReport, signal?: AbortSignal): Promise<void> {
    await this.#json('POST', `/v1/agent/services/${encodeURIComponent(serviceId)}/report`, report, signal);
  }

  /**
   * The service's source tarball of `digest`, read up to `maxBytes` (the download stops there: a server, or what
   * pretends to be one, cannot make the agent hold more).
   * @throws ApiError when the server refuses (409: the service moved to another digest); Error when the digest the
   *   server declares is not the one asked for, or the tarball is larger than `maxBytes`.
   */
  async tarball(serviceId: string, digest: string, signal?: AbortSignal, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
    const response = await this.#fetch(
      'GET',
      `/v1/agent/services/${encodeURIComponent(serviceId)}/tarball?digest=${digest}`,
      undefined,
      signal,
    );
    if (!response.ok) throw await apiError(response);
    const declared = response.headers.get('x-gantry-digest');
    if (declared !== digest) throw new Error(`tarball of service ${serviceId}: the server declared digest ${declared}, not ${digest}`);
    return await bodyUpTo(response, maxBytes, `tarball of service ${serviceId}`);
  }

  async #json(method: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    const response = await this.#fetch(method, path, body, signal);
    if (!response.ok) throw await apiError(response);
    return response.status === 204 ? undefined : await response.json();
  }

  async #fetch(method: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 60_000);
    try {
      return await fetch(new URL(path, this.#options.server), {
        method,
        headers: { authorization: `Bearer ${this.#token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new Error(`cannot reach the Gantry server at ${this.#options.server}: ${reason}`);
    }
  }
}

async function apiError(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => ({}))) as { message?: string; field?: string };
  return new ApiError(response.status, body.message ?? `HTTP ${response.status}`, body.field);
}

/**
 * The response's body, when it holds at most `maxBytes`.
 * @throws Error naming `what` as soon as the declared length or the bytes read pass `maxBytes` (the body is cancelled).
 */
async function bodyUpTo(response: Response, maxBytes: number, what: string): Promise<Buffer> {
  const tooLarge = () => new Error(`${what} is larger than ${maxBytes} bytes, the agent's limit`);
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
