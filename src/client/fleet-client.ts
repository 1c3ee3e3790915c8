/**
 * A typed client of the fleet API (/v1), for the CLI, the operator and the web UI: the same endpoints and shapes the
 * server documents at /v1/openapi.json. It uses only fetch, so it runs in a browser too, where it sends no token and
 * the browser sends the session cookie.
 */
import type { Static } from 'typebox';
import type { ClusterSchema, CreatedClusterSchema, NewClusterBody } from '../api/clusters.ts';
import type { ContextUpsertBody, ServiceContextSchema } from '../api/contexts.ts';
import type { ApiRollout, RolloutSpec } from '../api/rollouts.ts';
import type { GlobalServiceSchema, GlobalServiceUpdateBody, NewGlobalServiceBody } from '../api/global-services.ts';
import type { RouterSchema, RouterUpsertBody, SinkSchema, SinkUpsertBody } from '../api/notifications.ts';
import type { PipelineSchema, PipelineUpsertBody, PromotionSchema } from '../api/pipelines.ts';
import type { PreviewSchema } from '../api/previews.ts';
import type {
  HelmRepositorySchema,
  HelmRepositoryUpsertBody,
  NewRepositoryBody,
  ReplicaSchema,
  RepositorySchema,
} from '../api/repositories.ts';
import type {
  NewServiceBody,
  RejectionSchema,
  RejectOutcomeSchema,
  RevisionDiffSchema,
  RevisionSchema,
  ServiceDocsSchema,
  ServiceSchema,
  ServiceUpdateBody,
} from '../api/services.ts';
import type { AuditEventSchema, IdentitySchema, RoleBindingSchema, RoleBindingUpsertSchema, UserSchema } from '../api/users.ts';

export type ApiCluster = Static<typeof ClusterSchema>;
export type ApiRepository = Static<typeof RepositorySchema>;
export type ApiReplica = Static<typeof ReplicaSchema>;
export type ApiService = Static<typeof ServiceSchema>;
export type ApiRevision = Static<typeof RevisionSchema>;
export type ApiGlobalService = Static<typeof GlobalServiceSchema>;
export type ApiCreatedCluster = Static<typeof CreatedClusterSchema>;
export type ApiServiceContext = Static<typeof ServiceContextSchema>;
export type ApiSink = Static<typeof SinkSchema>;
export type ApiHelmRepository = Static<typeof HelmRepositorySchema>;
export type ApiRouter = Static<typeof RouterSchema>;
export type ApiPipeline = Static<typeof PipelineSchema>;
export type ApiPromotion = Static<typeof PromotionSchema>;
export type ApiUser = Static<typeof UserSchema>;
export type ApiRoleBinding = Static<typeof RoleBindingSchema>;
export type RoleBindingBody = Static<typeof RoleBindingUpsertSchema>;
export type ApiAuditEvent = Static<typeof AuditEventSchema>;
export type ApiIdentity = Static<typeof IdentitySchema>;
export type ApiRevisionDiff = Static<typeof RevisionDiffSchema>;
export type ApiServiceDocs = Static<typeof ServiceDocsSchema>;
export type ApiRejection = Static<typeof RejectionSchema>;
export type ApiPreview = Static<typeof PreviewSchema>;
export type { ApiRollout };
export type ApiRejectOutcome = Static<typeof RejectOutcomeSchema>;
/** approve or reject an APPROVAL gate; force any gate open (admins). */
export type GateDecision = 'approve' | 'reject' | 'force';

/** The server answered with an error: its status, message and, for bad input, the offending field. */
export class ApiError extends Error {
  readonly status: number;
  readonly field: string | undefined;

  constructor(status: number, message: string, field?: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.field = field;
  }
}

export interface FleetClientOptions {
  /** The server's base URL, e.g. http://127.0.0.1:8090. */
  server: string;
  /** An API token (gantry-api-…) or, for agents, a deploy token; none in a browser, which sends its session cookie. */
  token?: string;
  /** Per-request timeout in milliseconds. Default 30 s. */
  timeoutMs?: number;
}

/**
 * One method per fleet API endpoint, returning the JSON answer as the Api* type of its schema (undefined for 204).
 * Stateless: one instance may serve concurrent calls and needs no closing; each request ends after `timeoutMs`.
 * @throws (each method) ApiError with the server's status, message and field when it answers with an error; Error
 *   saying the server cannot be reached on a network failure or timeout.
 */
export class FleetClient {
  readonly #options: FleetClientOptions;

  constructor(options: FleetClientOptions) {
    this.#options = options;
  }

  listClusters(): Promise<ApiCluster[]> {
    return this.#call('GET', '/v1/clusters');
  }

  getCluster(name: string): Promise<ApiCluster> {
    return this.#call('GET', `/v1/clusters/${encodeURIComponent(name)}`);
  }

  createCluster(cluster: NewClusterBody): Promise<ApiCreatedCluster> {
    return this.#call('POST', '/v1/clusters', cluster);
  }

  /** With `confirm`, goes ahead even when global services would lose more than the server's share of copies. */
  setClusterTags(name: string, tags: Record<string, string>, confirm = false): Promise<ApiCluster> {
    return this.#call('PUT', `/v1/clusters/${encodeURIComponent(name)}/tags${confirm ? '?confirm=true' : ''}`, { tags });
  }

  /** Holds the cluster's agent at `version`; null lets it follow the server's own. */
  setAgentVersion(name: string, version: string | null): Promise<ApiCluster> {
    return this.#call('PUT', `/v1/clusters/${encodeURIComponent(name)}/agent-version`, { version });
  }

  async deleteCluster(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/clusters/${encodeURIComponent(name)}`);
  }

  rotateDeployToken(name: string, revokeOthers: boolean): Promise<{ deployToken: string }> {
    return this.#call('POST', `/v1/clusters/${encodeURIComponent(name)}/token`, { revokeOthers });
  }

  /** Asks the cluster's agent to rotate its deploy token by itself at its next ping. */
  requestTokenRotation(name: string): Promise<ApiCluster> {
    return this.#call('POST', `/v1/clusters/${encodeURIComponent(name)}/token-rotation`);
  }

  listRepositories(): Promise<ApiRepository[]> {
    return this.#call('GET', '/v1/repositories');
  }

  /** By id or URL. */
  getRepository(idOrUrl: string): Promise<ApiRepository> {
    return this.#call('GET', `/v1/repositories/${encodeURIComponent(idOrUrl)}`);
  }

  createRepository(repository: NewRepositoryBody): Promise<ApiRepository> {
    return this.#call('POST', '/v1/repositories', repository);
  }

  async deleteRepository(idOrUrl: string): Promise<void> {
    await this.#call('DELETE', `/v1/repositories/${encodeURIComponent(idOrUrl)}`);
  }

  /** The server replicas that are up, each with the repositories it fetches. */
  listReplicas(): Promise<ApiReplica[]> {
    return this.#call('GET', '/v1/replicas');
  }

  listServices(cluster?: string): Promise<ApiService[]> {
    return this.#call('GET', `/v1/services${cluster ? `?cluster=${encodeURIComponent(cluster)}` : ''}`);
  }

  getService(cluster: string, name: string): Promise<ApiService> {
    return this.#call('GET', servicePath(cluster, name));
  }

  createService(cluster: string, service: NewServiceBody): Promise<ApiService> {
    return this.#call('POST', `/v1/clusters/${encodeURIComponent(cluster)}/services`, service);
  }

  updateService(cluster: string, name: string, changes: ServiceUpdateBody): Promise<ApiService> {
    return this.#call('PATCH', servicePath(cluster, name), changes);
  }

  /** Resolves with the service while its agent deletes its objects, undefined when it was detached. */
  deleteService(cluster: string, name: string, detach: boolean): Promise<ApiService | undefined> {
    return this.#call('DELETE', `${servicePath(cluster, name)}${detach ? '?detach=true' : ''}`);
  }

  listRevisions(cluster: string, name: string): Promise<ApiRevision[]> {
    return this.#call('GET', `${servicePath(cluster, name)}/revisions`);
  }

  rollbackService(cluster: string, name: string, revision: number): Promise<ApiService> {
    return this.#call('POST', `${servicePath(cluster, name)}/rollback`, { revision });
  }

  /** Rejects a revision's content for the service, or its repository folder fleet-wide (admins). */
  rejectRevision(
    cluster: string,
    name: string,
    revision: number,
    body: { reason: string; fleetWide?: boolean },
  ): Promise<ApiRejectOutcome> {
    return this.#call('POST', `${servicePath(cluster, name)}/revisions/${revision}/reject`, body);
  }

  /** Asks the service's agent for a dry run of its source at `ref`: a PENDING preview, DONE once the agent reported. */
  createPreview(cluster: string, name: string, ref: string): Promise<ApiPreview> {
    return this.#call('POST', `${servicePath(cluster, name)}/previews`, { ref });
  }

  getPreview(cluster: string, name: string, id: string): Promise<ApiPreview> {
    return this.#call('GET', `${servicePath(cluster, name)}/previews/${encodeURIComponent(id)}`);
  }

  listRejections(): Promise<ApiRejection[]> {
    return this.#call('GET', '/v1/rejections');
  }

  async deleteRejection(id: string): Promise<void> {
    await this.#call('DELETE', `/v1/rejections/${encodeURIComponent(id)}`);
  }

  /** Ends a rollback's pin: the newest revision becomes current. @throws ApiError 409 when not pinned. */
  releaseService(cluster: string, name: string): Promise<ApiService> {
    return this.#call('POST', `${servicePath(cluster, name)}/release`);
  }

  listGlobalServices(): Promise<ApiGlobalService[]> {
    return this.#call('GET', '/v1/globalservices');
  }

  getGlobalService(name: string): Promise<ApiGlobalService> {
    return this.#call('GET', `/v1/globalservices/${encodeURIComponent(name)}`);
  }

  createGlobalService(global: NewGlobalServiceBody): Promise<ApiGlobalService> {
    return this.#call('POST', '/v1/globalservices', global);
  }

  /** The global service's newest rollout. */
  getRollout(name: string): Promise<ApiRollout> {
    return this.#call('GET', `/v1/globalservices/${encodeURIComponent(name)}/rollout`);
  }

  rolloutAction(name: string, action: 'pause' | 'resume' | 'abort'): Promise<ApiRollout> {
    return this.#call('POST', `/v1/globalservices/${encodeURIComponent(name)}/rollout/${action}`);
  }

  /** Upgrades the agents the server keeps to `version` (default the server's own), wave by wave. */
  startAgentRollout(body: { version?: string; rollout: RolloutSpec }): Promise<ApiRollout> {
    return this.#call('POST', '/v1/agents/rollout', body);
  }

  /** The agents' newest rollout. */
  getAgentRollout(): Promise<ApiRollout> {
    return this.#call('GET', '/v1/agents/rollout');
  }

  agentRolloutAction(action: 'pause' | 'resume' | 'abort'): Promise<ApiRollout> {
    return this.#call('POST', `/v1/agents/rollout/${action}`);
  }

  getStageRollout(pipeline: string, stage: string): Promise<ApiRollout> {
    return this.#call('GET', `/v1/pipelines/${encodeURIComponent(pipeline)}/stages/${encodeURIComponent(stage)}/rollout`);
  }

  stageRolloutAction(pipeline: string, stage: string, action: 'pause' | 'resume' | 'abort'): Promise<ApiRollout> {
    return this.#call('POST', `/v1/pipelines/${encodeURIComponent(pipeline)}/stages/${encodeURIComponent(stage)}/rollout/${action}`);
  }

  /** Asks the agents of every copy's cluster for a dry run of the global service with `template`; nothing changes. */
  previewGlobalService(name: string, template: GlobalServiceUpdateBody['template']): Promise<ApiPreview[]> {
    return this.#call('POST', `/v1/globalservices/${encodeURIComponent(name)}/previews`, { template });
  }

  updateGlobalService(name: string, changes: GlobalServiceUpdateBody, confirm: boolean): Promise<ApiGlobalService> {
    return this.#call('PATCH', `/v1/globalservices/${encodeURIComponent(name)}${confirm ? '?confirm=true' : ''}`, changes);
  }

  async deleteGlobalService(name: string, options: { detach: boolean; confirm: boolean }): Promise<void> {
    const query = new URLSearchParams({
      ...(options.detach ? { detach: 'true' } : {}),
      ...(options.confirm ? { confirm: 'true' } : {}),
    }).toString();
    await this.#call('DELETE', `/v1/globalservices/${encodeURIComponent(name)}${query ? `?${query}` : ''}`);
  }

  listPipelines(): Promise<ApiPipeline[]> {
    return this.#call('GET', '/v1/pipelines');
  }

  getPipeline(name: string): Promise<ApiPipeline> {
    return this.#call('GET', `/v1/pipelines/${encodeURIComponent(name)}`);
  }

  /** Creates the pipeline or replaces it whole. */
  setPipeline(name: string, pipeline: PipelineUpsertBody): Promise<ApiPipeline> {
    return this.#call('PUT', `/v1/pipelines/${encodeURIComponent(name)}`, pipeline);
  }

  async deletePipeline(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/pipelines/${encodeURIComponent(name)}`);
  }

  /** Decides the gate for its source stage's current context. */
  decideGate(name: string, edge: { from: string; to: string }, gate: string, decision: GateDecision): Promise<ApiPipeline> {
    const parts = [name, 'edges', edge.from, edge.to, 'gates', gate, decision].map(encodeURIComponent).join('/');
    return this.#call('POST', `/v1/pipelines/${parts}`);
  }

  /** Asks the agents of the edge's target clusters for dry runs of its pending promotion: one preview per target. */
  previewPromotion(name: string, edge: { from: string; to: string }): Promise<ApiPreview[]> {
    const parts = [name, 'edges', edge.from, edge.to, 'previews'].map(encodeURIComponent).join('/');
    return this.#call('POST', `/v1/pipelines/${parts}`);
  }

  listPromotions(name: string): Promise<ApiPromotion[]> {
    return this.#call('GET', `/v1/pipelines/${encodeURIComponent(name)}/promotions`);
  }

  listContexts(): Promise<ApiServiceContext[]> {
    return this.#call('GET', '/v1/contexts');
  }

  getContext(name: string): Promise<ApiServiceContext> {
    return this.#call('GET', `/v1/contexts/${encodeURIComponent(name)}`);
  }

  /** Creates the context or replaces its configuration; bound services get a new revision when it changed. */
  setContext(name: string, context: ContextUpsertBody): Promise<ApiServiceContext> {
    return this.#call('PUT', `/v1/contexts/${encodeURIComponent(name)}`, context);
  }

  async deleteContext(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/contexts/${encodeURIComponent(name)}`);
  }

  listHelmRepositories(): Promise<ApiHelmRepository[]> {
    return this.#call('GET', '/v1/helmrepositories');
  }

  /** Registers the chart repository's credentials, or replaces them; they are never returned. */
  setHelmRepository(repository: HelmRepositoryUpsertBody): Promise<ApiHelmRepository> {
    return this.#call('PUT', '/v1/helmrepositories', repository);
  }

  async deleteHelmRepository(id: string): Promise<void> {
    await this.#call('DELETE', `/v1/helmrepositories/${encodeURIComponent(id)}`);
  }

  listSinks(): Promise<ApiSink[]> {
    return this.#call('GET', '/v1/notifications/sinks');
  }

  /** Creates the sink or replaces it; its url and hmacKey are never returned. */
  setSink(name: string, sink: SinkUpsertBody): Promise<ApiSink> {
    return this.#call('PUT', `/v1/notifications/sinks/${encodeURIComponent(name)}`, sink);
  }

  async deleteSink(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/notifications/sinks/${encodeURIComponent(name)}`);
  }

  listRouters(): Promise<ApiRouter[]> {
    return this.#call('GET', '/v1/notifications/routers');
  }

  setRouter(name: string, router: RouterUpsertBody): Promise<ApiRouter> {
    return this.#call('PUT', `/v1/notifications/routers/${encodeURIComponent(name)}`, router);
  }

  async deleteRouter(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/notifications/routers/${encodeURIComponent(name)}`);
  }

  /** The Markdown files below the service's docsPath in its current revision's source. */
  serviceDocs(cluster: string, name: string): Promise<ApiServiceDocs> {
    return this.#call('GET', `${servicePath(cluster, name)}/docs`);
  }

  /** The files that differ between two revisions' sources, a unified diff each. */
  revisionDiff(cluster: string, name: string, from: number, to: number): Promise<ApiRevisionDiff> {
    return this.#call('GET', `${servicePath(cluster, name)}/revisions/diff?from=${from}&to=${to}`);
  }

  whoAmI(): Promise<ApiIdentity> {
    return this.#call('GET', '/v1/me');
  }

  listUsers(): Promise<ApiUser[]> {
    return this.#call('GET', '/v1/users');
  }

  createUser(user: { name: string; password: string; groups?: string[] }): Promise<ApiUser> {
    return this.#call('POST', '/v1/users', user);
  }

  updateUser(name: string, change: { password?: string; groups?: string[] }): Promise<ApiUser> {
    return this.#call('PATCH', `/v1/users/${encodeURIComponent(name)}`, change);
  }

  /** Changes the password of the user the token belongs to; their other sessions end. */
  async changeOwnPassword(currentPassword: string, newPassword: string): Promise<void> {
    await this.#call('POST', '/v1/me/password', { currentPassword, newPassword });
  }

  async deleteUser(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/users/${encodeURIComponent(name)}`);
  }

  listRoleBindings(): Promise<ApiRoleBinding[]> {
    return this.#call('GET', '/v1/role-bindings');
  }

  setRoleBinding(name: string, binding: RoleBindingBody): Promise<ApiRoleBinding> {
    return this.#call('PUT', `/v1/role-bindings/${encodeURIComponent(name)}`, binding);
  }

  async deleteRoleBinding(name: string): Promise<void> {
    await this.#call('DELETE', `/v1/role-bindings/${encodeURIComponent(name)}`);
  }

  /** Newest first. */
  listAuditEvents(limit: number): Promise<ApiAuditEvent[]> {
    return this.#call('GET', `/v1/audit?limit=${limit}`);
  }

  /**
   * @throws ApiError for an error answer; Error naming the server when it cannot be reached or times out.
   */
  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = new URL(path, this.#options.server);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          ...(this.#options.token === undefined ? {} : { authorization: `Bearer ${this.#options.token}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000),
      });
    } catch (error) {
      const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new Error(`cannot reach the Gantry server at ${this.#options.server}: ${reason}`);
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    const parsed = parseJson(text);
    if (!response.ok) {
      const answer = (parsed ?? {}) as { message?: string; field?: string };
      throw new ApiError(response.status, answer.message ?? `${method} ${path}: HTTP ${response.status}`, answer.field);
    }
    return parsed as T;
  }
}

function servicePath(cluster: string, name: string): string {
  return `/v1/clusters/${encodeURIComponent(cluster)}/services/${encodeURIComponent(name)}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
