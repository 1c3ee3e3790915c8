/**
 * The schema's versioned migrations, run in order by Kysely's Migrator at every server start (it records what ran
 * in its own table and, on PostgreSQL, holds an advisory lock, so replicas starting together run each once).
 * Migrations are append-only: a released one is never edited, a change is a new one. Column types are the few
 * both SQLite and PostgreSQL treat alike (text, integer); see schema.ts for why.
 */
import { type Kysely, type Migration, sql } from 'kysely';

/** Only the schema builder is used here, so the table types do not matter to the migrations. */
type AnyDatabase = Kysely<unknown>;

async function initialSchema(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('clusters')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('handle', 'text', (c) => c.notNull().unique())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('distro', 'text')
    .addColumn('kubernetes_version', 'text')
    .addColumn('agent_version', 'text')
    .addColumn('pinged_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('deploy_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('deploy_tokens_cluster').on('deploy_tokens').column('cluster_id').execute();

  await db.schema
    .createTable('git_repositories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull().unique())
    .addColumn('credentials', 'text')
    .addColumn('health', 'text')
    .addColumn('last_error', 'text')
    .addColumn('pulled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('global_services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('distro', 'text')
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('repository_id', 'text', (c) => c.references('git_repositories.id'))
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('configuration', 'text')
    .addColumn('dependencies', 'text', (c) => c.notNull())
    .addColumn('protect', 'integer', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.references('global_services.id').onDelete('set null'))
    .addColumn('revision_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('errors', 'text', (c) => c.notNull())
    .addColumn('applied_revision_id', 'text')
    .addColumn('deleted_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('services_cluster_name', ['cluster_id', 'name'])
    .execute();
  await db.schema.createIndex('services_repository').on('services').column('repository_id').execute();
  await db.schema.createIndex('services_owner').on('services').column('owner_id').execute();

  await db.schema
    .createTable('revisions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('commit_sha', 'text')
    .addColumn('digest', 'text')
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('configuration', 'text')
    .addColumn('message', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('revisions_service_number', ['service_id', 'number'])
    .execute();

  await db.schema
    .createTable('service_components')
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
    .addColumn('group', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('synced', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('service_components_key', ['service_id', 'group', 'version', 'kind', 'namespace', 'name'])
    .execute();

  await db.schema
    .createTable('service_contexts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('configuration', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
}

async function serverReplicas(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('server_replicas')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'text', (c) => c.notNull())
    .execute();
}

/** Revisions of helm services record the chart version their version (range) resolved to. */
async function revisionChartVersion(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('revisions').addColumn('chart_version', 'text').execute();
}

/** Notification sinks (their address and key sealed) and routers (events and filters → sinks), as Plural's. */
async function notifications(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('notification_sinks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('configuration', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('notification_routers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('filters', 'text', (c) => c.notNull())
    .addColumn('sinks', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

/** Helm repositories, with credentials (sealed) used by URL when the server pulls charts. */
async function helmRepositories(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('helm_repositories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull().unique())
    .addColumn('credentials', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

/** Helm values that are secrets (from a Secret: Plural's valuesFrom), sealed apart from the spec, per revision too. */
async function secretValues(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('services').addColumn('secret_values', 'text').execute();
  await db.schema.alterTable('revisions').addColumn('secret_values', 'text').execute();
}

/** Release pipelines: their spec, the promotion contexts of their stages, their gates' states and promotions. */
async function pipelines(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('pipelines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('pipeline_contexts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('pipeline_id', 'text', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('services', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pipeline_contexts_stage').on('pipeline_contexts').columns(['pipeline_id', 'stage', 'created_at']).execute();
  await db.schema
    .createTable('pipeline_gates')
    .addColumn('pipeline_id', 'text', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
    .addColumn('from_stage', 'text', (c) => c.notNull())
    .addColumn('to_stage', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('context_id', 'text')
    .addColumn('decided_by', 'text')
    .addColumn('reason', 'text')
    .addColumn('forced', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('pipeline_gates_pk', ['pipeline_id', 'from_stage', 'to_stage', 'name'])
    .execute();
  await db.schema
    .createTable('pipeline_promotions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('pipeline_id', 'text', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
    .addColumn('from_stage', 'text', (c) => c.notNull())
    .addColumn('to_stage', 'text', (c) => c.notNull())
    .addColumn('context_id', 'text', (c) => c.notNull())
    .addColumn('services', 'text', (c) => c.notNull())
    .addColumn('gates', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('pipeline_promotions_once', ['pipeline_id', 'from_stage', 'to_stage', 'context_id'])
    .execute();
}

/**
 * People and their rights: users with argon2id password hashes, role bindings (subjects, a role and a scope, as
 * JSON), browser sessions (hashed cookie values), the audit log of mutating requests, and API tokens that act as
 * a user.
 */
async function users(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('groups', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('role_bindings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('subjects', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_expiry').on('sessions').column('expires_at').execute();
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_events_at').on('audit_events').column('at').execute();
  await db.schema.alterTable('api_tokens').addColumn('user_id', 'text').execute();
}

/** Which replica holds each cluster's agent socket, so a proxied request reaching another replica is passed on. */
async function agentTunnels(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('agent_tunnels')
    .addColumn('cluster_id', 'text', (c) => c.primaryKey().references('clusters.id').onDelete('cascade'))
    .addColumn('replica_id', 'text', (c) => c.notNull())
    .addColumn('connected_at', 'text', (c) => c.notNull())
    .execute();
}

/** Failed logins per user, for the lockout after repeated wrong passwords. */
async function loginFailures(db: AnyDatabase): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('failed_logins', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('users').addColumn('first_failed_at', 'text').execute();
}

/** Failed logins per client address, for the limit on one address guessing across many users. */
async function loginAddresses(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('login_addresses')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('failed_logins', 'integer', (c) => c.notNull())
    .addColumn('first_failed_at', 'text', (c) => c.notNull())
    .execute();
}

/** What the agent reports of a component that drifted from what it applied (JSON), null when it did not. */
async function componentDrift(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('service_components').addColumn('drift', 'text').execute();
}

/** A rollback's pin: the service stays at its revision, newer ones wait, until released. */
async function servicePin(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('services').addColumn('pinned', 'text').execute();
}

/** The end of a JOB gate's Job's logs, reported with its outcome. */
async function gateLogs(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('pipeline_gates').addColumn('logs', 'text').execute();
}

/** Revisions (a folder's content, by digest) rejected for a service or fleet-wide for the folder. */
async function rejections(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('rejections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('repository_id', 'text', (c) => c.notNull().references('git_repositories.id').onDelete('cascade'))
    .addColumn('folder', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.references('services.id').onDelete('cascade'))
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rejections_repository').on('rejections').column('repository_id').execute();
}

/** Previews: a service's source at another ref, dry-run by its agent against the live cluster. */
async function previews(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('previews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
    .addColumn('cluster_id', 'text', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('previews_cluster_state').on('previews').columns(['cluster_id', 'state']).execute();
}

/**
 * Previews of pending promotions and template edits: the values they render with (sealed, as a service's are), what
 * asked for them (a pipeline edge's context, a global service's edit), the key a later request may reuse a result
 * by, and when they expire.
 */
async function previewOrigins(db: AnyDatabase): Promise<void> {
  for (const column of ['sealed_values', 'origin', 'cache_key', 'expires_at'])
    await db.schema.alterTable('previews').addColumn(column, 'text').execute();
  // Previews made before expiry was kept are expired: nothing reuses them, and a PENDING one fails at the next sweep.
  await sql`update previews set expires_at = created_at where expires_at is null`.execute(db);
  await db.schema.createIndex('previews_origin').on('previews').column('origin').execute();
  await db.schema.createIndex('previews_cache_key').on('previews').column('cache_key').execute();
}

/**
 * Progressive rollouts: a global service's rollout spec, and each rollout's state with its copies (a global service's
 * or a pipeline stage's).
 */
async function rollouts(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('global_services').addColumn('rollout', 'text').execute();
  await db.schema
    .createTable('rollouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Whose rollout it is: a global service's copies, or a pipeline stage's services (pipeline_id and stage).
    .addColumn('global_service_id', 'text', (c) => c.references('global_services.id').onDelete('cascade'))
    .addColumn('pipeline_id', 'text', (c) => c.references('pipelines.id').onDelete('cascade'))
    .addColumn('stage', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('cause', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('wave', 'integer', (c) => c.notNull())
    .addColumn('soaking_since', 'text')
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('copies', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rollouts_global_service').on('rollouts').columns(['global_service_id', 'created_at']).execute();
  await db.schema.createIndex('rollouts_stage').on('rollouts').columns(['pipeline_id', 'stage', 'created_at']).execute();
  await db.schema.createIndex('rollouts_state').on('rollouts').column('state').execute();
}

/** A global service's clusters left out by handle (Plural's ignoreClusters): a JSON array, `[]` for none. */
async function globalServiceIgnoreClusters(db: AnyDatabase): Promise<void> {
  await db.schema
    .alterTable('global_services')
    .addColumn('ignore_clusters', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
}

/**
 * Plural's multi-source services: the commits of a revision's extra sources, and which repositories each service's
 * extra sources come from (a repository in use is not deleted; a commit to it moves the service).
 */
async function serviceSources(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('revisions').addColumn('source_commits', 'text').execute();
  await db.schema
    .createTable('service_sources')
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
    .addColumn('repository_id', 'text', (c) => c.notNull().references('git_repositories.id'))
    .addPrimaryKeyConstraint('service_sources_pk', ['service_id', 'repository_id'])
    .execute();
  await db.schema.createIndex('service_sources_repository').on('service_sources').column('repository_id').execute();
}

/**
 * Deploy tokens an agent rotates by itself: a token's first use, which starts the expiry of its cluster's older
 * tokens, and that expiry; a cluster's asked-for rotation and the token its agent uses.
 */
async function deployTokenRotation(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('deploy_tokens').addColumn('first_used_at', 'text').execute();
  await db.schema.alterTable('deploy_tokens').addColumn('expires_at', 'text').execute();
  await db.schema.alterTable('clusters').addColumn('token_rotation_requested_at', 'text').execute();
  await db.schema.alterTable('clusters').addColumn('deploy_token_created_at', 'text').execute();
}

/** A cluster's agent held at a version other than the server's own (clusters.ts: wantedAgentVersion). */
async function agentVersionPin(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('clusters').addColumn('agent_version_pin', 'text').execute();
}

/** Rollouts of the fleet's agents to a version (server/agent-upgrades.ts): the version, set on no other rollout. */
async function agentRollouts(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('rollouts').addColumn('agent_version', 'text').execute();
}

/** Why a component is not RUNNING, as its agent's readiness rules say (a Cluster API Cluster's phase and reason). */
async function componentMessages(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('service_components').addColumn('message', 'text').execute();
}

/** Clusters Cluster API makes (src/capi): how, as JSON. */
async function clusterProvisioning(db: AnyDatabase): Promise<void> {
  await db.schema.alterTable('clusters').addColumn('provisioning', 'text').execute();
}

/** By name; Kysely runs them in name order. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001-initial-schema': { up: initialSchema },
  '0002-server-replicas': { up: serverReplicas },
  '0003-revision-chart-version': { up: revisionChartVersion },
  '0004-notifications': { up: notifications },
  '0005-helm-repositories': { up: helmRepositories },
  '0006-secret-values': { up: secretValues },
  '0007-pipelines': { up: pipelines },
  '0008-users': { up: users },
  '0009-agent-tunnels': { up: agentTunnels },
  '0010-login-failures': { up: loginFailures },
  '0011-login-addresses': { up: loginAddresses },
  '0012-component-drift': { up: componentDrift },
  '0013-service-pin': { up: servicePin },
  '0014-gate-logs': { up: gateLogs },
  '0015-rejections': { up: rejections },
  '0016-previews': { up: previews },
  '0017-preview-origins': { up: previewOrigins },
  '0018-rollouts': { up: rollouts },
  '0019-global-service-ignore-clusters': { up: globalServiceIgnoreClusters },
  '0020-service-sources': { up: serviceSources },
  '0021-deploy-token-rotation': { up: deployTokenRotation },
  '0022-agent-version-pin': { up: agentVersionPin },
  '0023-agent-rollouts': { up: agentRollouts },
  '0024-component-messages': { up: componentMessages },
  '0025-cluster-provisioning': { up: clusterProvisioning },
};
