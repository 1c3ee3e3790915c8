/**
 * The fleet server's tables as Kysely sees them. One schema for SQLite and PostgreSQL: times are ISO-8601 UTC
 * strings (they sort as text on both), JSON documents and encrypted secrets are text, flags are integers 0/1,
 * ids are random UUIDs made by the server. Names follow Plural's model where it has one (cluster handle, deploy
 * token, service revision, component, global service, service context).
 */
import type { Generated } from 'kysely';

export interface ClusterTable {
  id: string;
  /** Unique, human-chosen; the CLI and API address clusters by it. */
  name: string;
  /** Unique, stable across renames; Plural's handle (a Cluster resource adopts an existing cluster by it). */
  handle: string;
  /** JSON object of string tags, e.g. {"tier": "web"}; global services select on them. */
  tags: string;
  /** generic, eks, aks, gke, k3s, openshift, … as reported or set. */
  distro: string | null;
  /** The API server's version as the agent reports it, without "v" (Plural's currentVersion). */
  kubernetes_version: string | null;
  agent_version: string | null;
  pinged_at: string | null;
  created_at: string;
  updated_at: string;
  /** When an admin last asked the agent to rotate its deploy token (deploy-tokens.ts). */
  token_rotation_requested_at: string | null;
  /** created_at of the newest deploy token the agent has made a request with. */
  deploy_token_created_at: string | null;
  /** The agent version an admin holds the cluster at; null: the server's own. */
  agent_version_pin: string | null;
  /** JSON CapiClusterSpec (src/capi): how Cluster API makes it; null for a cluster made elsewhere. */
  provisioning: string | null;
}

/** Per-cluster agent credentials: only a SHA-256 of the token is kept; a revoked token stays for the audit. */
export interface DeployTokenTable {
  id: string;
  cluster_id: string;
  token_hash: string;
  created_at: string;
  revoked_at: string | null;
  /** The first request made with it; that request starts the expiry of the cluster's older tokens (deploy-tokens.ts). */
  first_used_at: string | null;
  /** It stops working at this time (an overlap after a newer token's first use); null while it has no end. */
  expires_at: string | null;
}

export interface GitRepositoryTable {
  id: string;
  url: string;
  /** Encrypted JSON {username, password} or {privateKey, passphrase, knownHosts} (see secret-box.ts), or null. */
  credentials: string | null;
  /** PULLABLE or FAILED after the first fetch, as Plural's GitRepository health; null before. */
  health: string | null;
  last_error: string | null;
  pulled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface ServiceTable {
  id: string;
  cluster_id: string;
  name: string;
  namespace: string;
  repository_id: string | null;
  /** JSON of the service's source, renderer and sync settings (see the API's ServiceSpec). */
  spec: string;
  /** Encrypted JSON object of configuration values, or null. */
  configuration: string | null;
  /** Encrypted JSON object of Helm values that are secrets (merged by the agent over the chart's others), or null. */
  secret_values: string | null;
  /** JSON array of names of services on the same cluster that must be healthy first. */
  dependencies: string;
  protect: number;
  /** The global service that made and keeps this service, if any. */
  owner_id: string | null;
  /** The revision the agent should run. */
  revision_id: string | null;
  /**
   * JSON {by, at} while a rollback pins the service at its current revision: newer revisions are recorded but not
   * made current until it is released (revisions.ts); null when not pinned.
   */
  pinned: string | null;
  /** stale | synced | healthy | failed, derived from the agent's reports as Plural does. */
  status: string;
  /** JSON array of {source, message} from the last report. */
  errors: string;
  /** Revision id the agent last reported applied. */
  applied_revision_id: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

/** The repositories a service's extra sources (spec.sources) come from: the commit tracker finds it by any of them. */
export interface ServiceSourceTable {
  service_id: string;
  repository_id: string;
}

/** A folder's content (tarball digest) that must never run: for one service, or for the folder fleet-wide. */
export interface RejectionTable {
  id: string;
  repository_id: string;
  folder: string;
  digest: string;
  commit_sha: string;
  /** Null: every service of the repository folder. */
  service_id: string | null;
  reason: string;
  created_by: string;
  created_at: string;
}

/** A service's source at another ref, dry-run by its agent: PENDING until the agent reports, then DONE or FAILED. */
export interface PreviewTable {
  id: string;
  service_id: string;
  cluster_id: string;
  ref: string;
  commit_sha: string;
  digest: string;
  /** JSON ServiceSpec pinned to the commit: what the agent renders. */
  spec: string;
  state: string;
  /** JSON PreviewResult once the agent reported. */
  result: string | null;
  requested_by: string;
  created_at: string;
  finished_at: string | null;
  /** Sealed JSON {configuration, secretValues} the preview renders with; null: the service's own. */
  sealed_values: string | null;
  /** What asked for it: `pipeline/<id>/<from>/<to>/<context id>` or `globalservice/<id>/<request id>`; null: a user. */
  origin: string | null;
  /** sha256 of (digest, spec, values, the service's live state): a DONE preview with the same key is reused. */
  cache_key: string | null;
  /** After this a PENDING preview fails and a DONE one is not reused any more (set for every row since 0017). */
  expires_at: string;
}

/** An immutable snapshot of what a service runs; rollback and promotion only add rows. */
export interface RevisionTable {
  id: string;
  service_id: string;
  /** 1, 2, 3, … per service, in creation order. */
  number: number;
  /** The resolved commit of the source, when it is git. */
  commit_sha: string | null;
  /** sha256 of the source tarball the agent downloads. */
  digest: string | null;
  /** The version a helm source's chart version (or range) resolved to; null for git sources. */
  chart_version: string | null;
  /** JSON array of the commits the spec's extra `sources` resolved to, in their order; null without them. */
  source_commits: string | null;
  spec: string;
  configuration: string | null;
  secret_values: string | null;
  message: string | null;
  created_by: string | null;
  created_at: string;
}

/** One object of a service as its agent last reported it. */
export interface ServiceComponentTable {
  service_id: string;
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
  /** A ComponentState (src/api/services.ts), as Plural's component states. */
  state: string;
  /** Why it is not RUNNING (Component.message); null when RUNNING or unsaid. */
  message: string | null;
  synced: number;
  /** JSON ComponentDrift (src/api/services.ts), null when the object is as applied. */
  drift: string | null;
}

export interface GlobalServiceTable {
  id: string;
  name: string;
  /** JSON object: clusters whose tags include all of these get the service. */
  tags: string;
  distro: string | null;
  /** JSON of the service template (name, namespace, spec, configuration reference). */
  template: string;
  /** JSON RolloutSpec (src/api/rollouts.ts): new revisions go wave by wave; null: to every copy at once. */
  rollout: string | null;
  /** JSON array of cluster handles that get no copy, whatever their tags (Plural's ignoreClusters). */
  ignore_clusters: string;
  created_at: string;
  updated_at: string;
}

/** A progressive rollout of a global service's new revision (src/server/rollouts.ts). */
export interface RolloutTable {
  id: string;
  /** A global service's rollout; null for a pipeline stage's. */
  global_service_id: string | null;
  /** A pipeline stage's rollout (with stage); null for a global service's. */
  pipeline_id: string | null;
  stage: string | null;
  /** The version a rollout of the fleet's agents moves them to; null for the others. */
  agent_version: string | null;
  /** A RolloutState. */
  state: string;
  cause: string;
  reason: string | null;
  /** The index of the wave under way. */
  wave: number;
  soaking_since: string | null;
  /** JSON RolloutSpec, as it was when the rollout started. */
  spec: string;
  /** JSON RolloutCopy[] (src/rollout/plan.ts). */
  copies: string;
  /** Bumped by every write: a write is made only over the version read (two replicas never both act). */
  version: number;
  created_at: string;
  updated_at: string;
}

/** Configuration shared across services (Plural's ServiceContext), bound into templates as `contexts`. */
export interface ServiceContextTable {
  id: string;
  name: string;
  /** Plain JSON object: a context is shared, non-secret configuration (secrets belong in a service's own). */
  configuration: string;
  created_at: string;
  updated_at: string;
}

/** Users' API tokens (hashed); the admin token is made at first start. */
export interface ApiTokenTable {
  id: string;
  name: string;
  token_hash: string;
  role: string;
  created_at: string;
  revoked_at: string | null;
  /** Set when the token acts as that user (their role bindings), `role` then unused. */
  user_id: string | null;
}

/** People who log in with a password (argon2id hash, PHC string); `groups` is a JSON string array. */
export interface UserTable {
  id: string;
  name: string;
  password_hash: string;
  groups: string;
  created_at: string;
  /** Wrong passwords since `first_failed_at`; reset by a right one or when the window passed. */
  failed_logins: Generated<number>;
  first_failed_at: string | null;
}

/**
 * Wrong passwords from one client address (an IPv4 address, or an IPv6 /64: users.ts's addressKey) since
 * `first_failed_at`, for the per-address login limit.
 */
export interface LoginAddressTable {
  address: string;
  failed_logins: number;
  first_failed_at: string;
}

/** A role granted to users and groups (`subjects`, JSON) within a `scope` (JSON; see rights.ts). */
export interface RoleBindingTable {
  name: string;
  role: string;
  subjects: string;
  scope: string;
  created_at: string;
  updated_at: string;
}

/** A browser session: the SHA-256 of its cookie value, its user, and when it ends. */
export interface SessionTable {
  id_hash: string;
  user_id: string;
  created_at: string;
  expires_at: string;
}

/** The replica holding a cluster's agent socket (the auth proxy's tunnel) since `connected_at`. */
export interface AgentTunnelTable {
  cluster_id: string;
  replica_id: string;
  connected_at: string;
}

/** One mutating API request: who, what (method and route), on what (the path), and the status answered. */
export interface AuditEventTable {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string;
  status: number;
}

/**
 * A `gantry server` replica that is up: it beats every few seconds; one whose beat is older than a few intervals
 * is taken for gone (see replicas.ts), so its git repositories pass to the others.
 */
export interface ServerReplicaTable {
  /** Random per process start. */
  id: string;
  /** Where the replica listens, for operators. */
  url: string;
  started_at: string;
  heartbeat_at: string;
}

/** A notification sink: `configuration` is the sealed JSON {url, hmacKey?} (addresses are secrets: a Slack URL is). */
export interface NotificationSinkTable {
  id: string;
  name: string;
  type: string;
  configuration: string;
  created_at: string;
  updated_at: string;
}

/** A notification router: `events`, `filters` and `sinks` (sink names) are JSON arrays. */
export interface NotificationRouterTable {
  id: string;
  name: string;
  events: string;
  filters: string;
  sinks: string;
  created_at: string;
  updated_at: string;
}

/** A Helm repository: `credentials` is the sealed JSON {username, password}, null for a public one. */
export interface HelmRepositoryTable {
  id: string;
  url: string;
  credentials: string | null;
  created_at: string;
  updated_at: string;
}

/** A release pipeline (Plural's Pipeline): its stages and edges as JSON, services by id (store/pipelines.ts). */
export interface PipelineTable {
  id: string;
  name: string;
  spec: string;
  created_at: string;
  updated_at: string;
}

/** A promotion context: a stage's services healthy at a revision, recorded once per new set of revisions. */
export interface PipelineContextTable {
  id: string;
  pipeline_id: string;
  stage: string;
  /** JSON [{serviceId, revision, commit, chartVersion}]. */
  services: string;
  created_at: string;
}

/** A gate of an edge, for the source stage's current context: PENDING, OPEN or CLOSED. */
export interface PipelineGateTable {
  pipeline_id: string;
  from_stage: string;
  to_stage: string;
  name: string;
  type: string;
  state: string;
  context_id: string | null;
  /** Who opened or closed it (a token's name), or null while pending. */
  decided_by: string | null;
  reason: string | null;
  /** A JOB gate's Job's logs (their ends), as its agent reported them with the outcome; null otherwise. */
  logs: string | null;
  forced: number;
  updated_at: string;
}

/** An edge's promotion of one context: unique per (pipeline, edge, context), so it happens once. */
export interface PipelinePromotionTable {
  id: string;
  pipeline_id: string;
  from_stage: string;
  to_stage: string;
  context_id: string;
  /** JSON [{serviceId, sourceId, commit, chartVersion, secrets, revision}] of the services promoted. */
  services: string;
  /** JSON of the gates as they stood: [{name, type, decidedBy, forced}]. */
  gates: string;
  created_at: string;
}

export interface Database {
  clusters: ClusterTable;
  deploy_tokens: DeployTokenTable;
  git_repositories: GitRepositoryTable;
  services: ServiceTable;
  service_sources: ServiceSourceTable;
  revisions: RevisionTable;
  service_components: ServiceComponentTable;
  global_services: GlobalServiceTable;
  service_contexts: ServiceContextTable;
  api_tokens: ApiTokenTable;
  users: UserTable;
  role_bindings: RoleBindingTable;
  sessions: SessionTable;
  login_addresses: LoginAddressTable;
  audit_events: AuditEventTable;
  agent_tunnels: AgentTunnelTable;
  server_replicas: ServerReplicaTable;
  notification_sinks: NotificationSinkTable;
  notification_routers: NotificationRouterTable;
  helm_repositories: HelmRepositoryTable;
  pipelines: PipelineTable;
  pipeline_contexts: PipelineContextTable;
  pipeline_gates: PipelineGateTable;
  pipeline_promotions: PipelinePromotionTable;
  rejections: RejectionTable;
  previews: PreviewTable;
  rollouts: RolloutTable;
}
