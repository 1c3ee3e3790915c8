/**
 * A thin HTTP client for the Kubernetes API that sends and receives raw JSON. Authentication (certificates,
 * tokens, exec plugins) comes from @kubernetes/client-node's KubeConfig; requests go through undici over one pooled
 * HTTP/1.1 agent per kubeconfig (transport.ts). The library's typed API is not used on purpose: its serializers drop
 * fields they do not know from built-in kinds, and Gantry must send objects exactly as rendered.
 *
 * As client-go's rest client does it, every request waits for the throttle its API server shares with every other
 * client of the process (QPS and burst), is retried when the server answers 429 Too Many Requests or a 5xx (after the
 * Retry-After the server asks for, else with exponential backoff) or drops an idempotent request's connection, and is
 * abandoned after a timeout or when the caller's signal fires.
 */
import type { Readable } from 'node:stream';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { TokenBucket } from 'limiter';
import { request, type Dispatcher } from 'undici';
import { sleep } from '../sleep.ts';
import { Http1KubeConfig } from './transport.ts';
import { messageOf } from '../problems.ts';

/** Options for choosing the cluster: both default to the usual kubeconfig rules ($KUBECONFIG, ~/.kube/config). */
export interface ConnectOptions {
  kubeconfig?: string;
  context?: string;
}

/** An API server response with a non-2xx status, carrying the server's Status reason and message. */
export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly details: unknown;

  constructor(status: number, reason: string, message: string, details: unknown) {
    super(message);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.details = details;
  }
}

/** The cluster could not be reached at all (DNS, refused connection, TLS), or did not answer in time. */
export class ClusterUnreachableError extends Error {
  constructor(server: string, cause: unknown) {
    super(`cannot reach the Kubernetes API server at ${server}: ${messageOf(cause)}`);
    this.name = 'ClusterUnreachableError';
  }
}

export interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
}

/** Waits until the API server may be sent one more request; rejects with the signal's reason when it fires first. */
export type RequestThrottle = (signal?: AbortSignal) => Promise<void>;

/**
 * client-go's client-side rate limit, a token bucket as its flowcontrol package has: up to `burst` requests at once
 * from a full bucket, refilled at `qps` a second, so a request past the burst waits 1/qps s, never a whole window.
 * @throws Error when qps or burst is not positive.
 */
export function requestThrottle(limits: { qps: number; burst: number }): RequestThrottle {
  if (!(limits.qps > 0) || !(limits.burst >= 1)) throw new Error(`invalid API rate limit: qps ${limits.qps}, burst ${limits.burst}`);
  const bucket = new TokenBucket({ bucketSize: Math.floor(limits.burst), tokensPerInterval: limits.qps, interval: 1000 });
  // client-go's bucket starts full; limiter's starts empty.
  bucket.content = bucket.bucketSize;
  const slot = () => bucket.removeTokens(1);
  return async (signal) => {
    signal?.throwIfAborted();
    if (!signal) {
      await slot();
      return;
    }
    // The bucket cannot withdraw one queued request: an aborted wait still takes its token when its turn comes.
    let onAbort: () => void = () => undefined;
    const aborted = new Promise<never>((_, reject) => (onAbort = () => reject(signal.reason)));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([slot(), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
}

export interface ClientOptions {
  /** Shared by every client of one API server (see requestThrottle); none: unlimited. */
  throttle?: RequestThrottle;
  /** A request, its retries included, is abandoned after this many ms. Default 60 s. */
  requestTimeoutMs?: number;
  /**
   * Refuse, before sending, every write that is not a server-side dry run (see isDryRunRequest): the client of a
   * dry run, so that a code path that forgets to ask for a dry run fails instead of changing the cluster.
   */
  dryRunOnly?: boolean;
}

/** A write reached the client of a dry run without asking for a dry run: a bug in Gantry, caught before sending. */
export class DryRunWriteError extends Error {
  constructor(method: string, path: string) {
    super(`refusing to send ${method} ${path} without dryRun during a dry run (a bug in Gantry: nothing was sent)`);
    this.name = 'DryRunWriteError';
  }
}

/**
 * Whether the API server persists nothing for this request: a read, or a write asking for `dryRun=All`. The API
 * server reads a DELETE's options from its body whenever it has one and ignores the query then
 * (k8s.io/apiserver, endpoints/handlers/delete.go), so a DELETE's dry run counts only in the body's DeleteOptions.
 */
export function isDryRunRequest(method: string, options: Pick<RequestOptions, 'query' | 'body'>): boolean {
  if (method === 'GET') return true;
  if (method === 'DELETE') {
    const dryRun = (options.body as { dryRun?: unknown } | undefined)?.dryRun;
    return Array.isArray(dryRun) && dryRun.includes('All');
  }
  return options.query?.dryRun === 'All';
}

const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * Retries, as client-go's rest client decides them: an answer 429 Too Many Requests or 5xx is retried only when the
 * server asks for it with Retry-After (API Priority and Fairness does; a 500 for an invalid object does not), a 429
 * whatever the method (it was never processed), a 5xx only for the methods that may be repeated (server-side apply
 * and merge patches may), as is a connection dropped before any answer. The wait is the Retry-After, else exponential
 * from 250 ms, plus up to as much again at random; at most 5 retries, and never past the request's timeout or the
 * caller's signal (undici's retry interceptor ignores an abort while it waits, so the loop is here).
 */
const MAX_RETRIES = 5;
const RETRY_BASE_MS = 250;
const MAX_RETRY_AFTER_MS = 30_000;
const REPEATABLE = new Set(['GET', 'PUT', 'PATCH', 'DELETE']);
const DROPPED = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/**
 * How long to wait before retry number `attempt` (1-based), or undefined: no retry.
 * @param status the answer's status; undefined when the connection dropped without one.
 */
function retryDelay(method: string, attempt: number, status: number | undefined, retryAfter: string | undefined): number | undefined {
  if (attempt > MAX_RETRIES) return undefined;
  let delay: number;
  if (status === undefined) {
    if (!REPEATABLE.has(method)) return undefined;
    delay = RETRY_BASE_MS * 2 ** (attempt - 1);
  } else {
    const asked = retryAfter === undefined ? NaN : Number(retryAfter) * 1000;
    if (!Number.isFinite(asked) || asked < 0) return undefined;
    if (status !== 429 && !(status >= 500 && REPEATABLE.has(method))) return undefined;
    delay = Math.min(Math.max(asked, RETRY_BASE_MS), MAX_RETRY_AFTER_MS);
  }
  // Up to as much again at random: clients told the same second must not all come back in the same instant.
  return delay * (1 + Math.random());
}

function droppedConnection(error: unknown): boolean {
  const code = (error as { code?: string; cause?: { code?: string } }).code ?? (error as { cause?: { code?: string } }).cause?.code;
  return code !== undefined && DROPPED.has(code);
}

/**
 * Loads a kubeconfig the way kubectl does and selects the context.
 * @throws Error when the file or the context does not exist.
 */
export function loadKubeConfig(options: ConnectOptions = {}): KubeConfig {
  const config = new KubeConfig();
  if (options.kubeconfig) config.loadFromFile(options.kubeconfig);
  else config.loadFromDefault();
  if (options.context) selectContext(config, options.context);
  if (!config.getCurrentCluster()) throw new Error('no Kubernetes cluster configured: pass --kubeconfig or set KUBECONFIG');
  return config;
}

/**
 * Makes `context` the current context of `config`.
 * @throws Error naming the contexts the kubeconfig has when it has no such context.
 */
export function selectContext(config: KubeConfig, context: string): void {
  if (!config.getContextObject(context)) {
    const known =
      config
        .getContexts()
        .map((entry) => entry.name)
        .join(', ') || 'none';
    throw new Error(`context '${context}' not found in kubeconfig (known contexts: ${known})`);
  }
  config.setCurrentContext(context);
}

/**
 * Raw JSON requests to one API server (the kubeconfig's current cluster), as the caller's credentials allow. Paths
 * are below the server's root (`/api/v1/namespaces`). Cheap to copy (withSignal, withoutSignal, dryRunOnly): copies
 * share the connections and throttle, and concurrent requests are fine. Whoever made the client calls close() when
 * done: it frees the connections of every client sharing its kubeconfig, copies included (a later request reopens).
 */
export class KubeClient {
  readonly config: Http1KubeConfig;
  readonly server: string;
  private readonly options: ClientOptions;
  /** Fires for every request of this client (see withSignal). */
  private readonly signal: AbortSignal | undefined;

  /** `config`'s requests go through a pooled HTTP/1.1 agent (see transport.ts for why not the library's). */
  constructor(config: KubeConfig, options: ClientOptions = {}, signal?: AbortSignal) {
    this.config = config instanceof Http1KubeConfig ? config : Http1KubeConfig.from(config);
    this.server = (config.getCurrentCluster()?.server ?? '').replace(/\/+$/, '');
    this.options = options;
    this.signal = signal;
  }

  /** This client with `signal` added to every request: same connections, throttle and options. */
  withSignal(signal: AbortSignal): KubeClient {
    return new KubeClient(this.config, this.options, this.signal ? AbortSignal.any([this.signal, signal]) : signal);
  }

  /**
   * This client without the signals withSignal added: same connections, throttle and options. For work whose end
   * is its own, such as releasing a lock once the signal that stopped its holder has fired.
   */
  withoutSignal(): KubeClient {
    return new KubeClient(this.config, this.options);
  }

  /** This client refusing every write that is not a dry run (see ClientOptions.dryRunOnly): same connections and throttle. */
  dryRunOnly(): KubeClient {
    return new KubeClient(this.config, { ...this.options, dryRunOnly: true }, this.signal);
  }

  /**
   * Sends one request and returns the decoded JSON body (undefined for an empty body).
   * @throws KubeApiError for a non-2xx answer (after retries); ClusterUnreachableError when no answer came in
   *   time; the signal's reason when the caller's signal fired.
   */
  async request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: RequestOptions = {}): Promise<T> {
    if (this.options.dryRunOnly && !isDryRunRequest(method, options)) throw new DryRunWriteError(method, path);
    const callerSignal = options.signal && this.signal ? AbortSignal.any([options.signal, this.signal]) : (options.signal ?? this.signal);
    await this.options.throttle?.(callerSignal);
    const timeout = AbortSignal.timeout(this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
    const url = this.url(path, options.query);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    for (let attempt = 1; ; attempt++) {
      let status: number | undefined;
      let retryAfter: string | undefined;
      try {
        const { headers, dispatcher } = await this.authenticate(url, method);
        headers['accept'] = options.accept ?? 'application/json';
        if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
        const response = await request(url, { method, headers, body, dispatcher, signal });
        const text = await response.body.text();
        if (response.statusCode < 300) return (text ? JSON.parse(text) : undefined) as T;
        status = response.statusCode;
        retryAfter = [response.headers['retry-after']].flat()[0];
        const delay = retryDelay(method, attempt, status, retryAfter);
        if (delay === undefined) throw toApiError(status, text);
        await sleep(delay, signal);
      } catch (error) {
        if (callerSignal?.aborted) throw callerSignal.reason;
        if (error instanceof KubeApiError) throw error;
        if (timeout.aborted) throw new ClusterUnreachableError(this.server, new Error('no answer in time'));
        const delay = status === undefined && droppedConnection(error) ? retryDelay(method, attempt, undefined, undefined) : undefined;
        if (delay === undefined) throw new ClusterUnreachableError(this.server, error);
        await sleep(delay, signal).catch(() => {
          throw callerSignal?.aborted ? callerSignal.reason : new ClusterUnreachableError(this.server, new Error('no answer in time'));
        });
      }
    }
  }

  /**
   * A streaming GET (a Pod's log with `follow`): the body as it arrives, ending when the server closes it or the
   * signal fires. Neither retried nor timed out, as a stream lives as long as its reader wants it.
   * @throws KubeApiError for a non-2xx answer; ClusterUnreachableError when no answer came; the signal's reason.
   */
  async stream(path: string, options: Pick<RequestOptions, 'query' | 'signal'> = {}): Promise<Readable> {
    const signal = options.signal && this.signal ? AbortSignal.any([options.signal, this.signal]) : (options.signal ?? this.signal);
    await this.options.throttle?.(signal);
    const url = this.url(path, options.query);
    try {
      const { headers, dispatcher } = await this.authenticate(url, 'GET');
      // A followed log may stay silent for longer than undici's default body timeout (300 s).
      const response = await request(url, { method: 'GET', headers, dispatcher, signal, bodyTimeout: 0 });
      if (response.statusCode < 300) return response.body;
      throw toApiError(response.statusCode, await response.body.text());
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof KubeApiError) throw error;
      throw new ClusterUnreachableError(this.server, error);
    }
  }

  /** Closes the connections (of every client sharing this one's kubeconfig) once their requests ended; a later request opens new ones. */
  close(): Promise<void> {
    return this.config.close();
  }

  private url(path: string, query: Record<string, string | undefined> = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, value);
    const search = params.toString();
    return `${this.server}${path}${search ? `?${search}` : ''}`;
  }

  private async authenticate(
    url: string,
    method: string,
  ): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher | undefined }> {
    const context = new RequestContext(url, method as HttpMethod);
    await this.config.applySecurityAuthentication(context);
    return { headers: { ...context.getHeaders() }, dispatcher: context.getDispatcher() as Dispatcher | undefined };
  }
}

function toApiError(status: number, text: string): KubeApiError {
  try {
    const body = JSON.parse(text) as { reason?: string; message?: string; details?: unknown };
    return new KubeApiError(status, body.reason ?? '', body.message ?? text, body.details);
  } catch {
    return new KubeApiError(status, '', text.trim() || `HTTP ${status}`, undefined);
  }
}
