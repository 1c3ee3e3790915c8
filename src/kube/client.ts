/**
 * A thin HTTP client for the Kubernetes API that sends and receives raw JSON. Authentication (certificates,
 * tokens, exec plugins) comes from @kubernetes/client-node's KubeConfig; requests go through undici over one pooled
 * HTTP/1.1 agent per kubeconfig (transport.ts). The library's typed API is not used on purpose: its serializers drop fields
 * they do not know from built-in kinds, and Gantry must send objects exactly as rendered.
 */
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { request, type Dispatcher } from 'undici';
import { Http1KubeConfig } from './transport.ts';

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

/** The cluster could not be reached at all (DNS, refused connection, TLS). */
export class ClusterUnreachableError extends Error {
  constructor(server: string, cause: unknown) {
    super(`cannot reach the Kubernetes API server at ${server}: ${cause instanceof Error ? cause.message : String(cause)}`);
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

/**
 * Loads a kubeconfig the way kubectl does and selects the context.
 * @throws Error when the file or the context does not exist.
 */
export function loadKubeConfig(options: ConnectOptions = {}): KubeConfig {
  const config = new KubeConfig();
  if (options.kubeconfig) config.loadFromFile(options.kubeconfig);
  else config.loadFromDefault();
  if (options.context) {
    if (!config.getContextObject(options.context)) {
      const known =
        config
          .getContexts()
          .map((context) => context.name)
          .join(', ') || 'none';
      throw new Error(`context '${options.context}' not found in kubeconfig (known contexts: ${known})`);
    }
    config.setCurrentContext(options.context);
  }
  if (!config.getCurrentCluster()) throw new Error('no Kubernetes cluster configured: pass --kubeconfig or set KUBECONFIG');
  return config;
}

export class KubeClient {
  readonly config: KubeConfig;
  readonly server: string;

  /** `config`'s requests go through a pooled HTTP/1.1 agent (see transport.ts for why not the library's). */
  constructor(config: KubeConfig) {
    this.config = config instanceof Http1KubeConfig ? config : Http1KubeConfig.from(config);
    this.server = (config.getCurrentCluster()?.server ?? '').replace(/\/+$/, '');
  }

  /**
   * Sends one request and returns the decoded JSON body (undefined for an empty body).
   * @throws KubeApiError for a non-2xx answer; ClusterUnreachableError when no answer came.
   */
  async request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: RequestOptions = {}): Promise<T> {
    const url = this.url(path, options.query);
    const { headers, dispatcher } = await this.authenticate(url, method);
    headers['accept'] = options.accept ?? 'application/json';
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        dispatcher,
        signal: options.signal,
      });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ClusterUnreachableError(this.server, error);
    }
    const text = await response.body.text();
    if (response.statusCode >= 300) throw toApiError(response.statusCode, text);
    return (text ? JSON.parse(text) : undefined) as T;
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
