/**
 * Who may do what: the roles, the scopes a role is bound within, and the one decision every route asks,
 * `allows(grants, action, target)`. Pure; the grants come from role bindings (store/role-bindings.ts) or a token's
 * role. Roles, as the UI issue defines them:
 *  - admin: everything within its scope; with scope `all`, also the fleet's configuration (clusters, repositories,
 *    contexts, notifications, global services, pipeline definitions, users and bindings) and forcing gates.
 *  - writer: reads, changes services (create, update, roll back, delete), approves gates, proxies.
 *  - approver: reads, approves or rejects pipeline gates, proxies.
 *  - reader: reads (never secrets in clear) and proxies; on the cluster, proxied requests run as the group the role
 *    maps to (see clusterGroups), which the agent's install binds read-only.
 * A scope is `all` or names clusters (by name or by tags, all of which must match), services (by name) and pipelines
 * (by name). Where a scope names both clusters and services the two are conjunctive: it covers those services on
 * those clusters only (a service named on one cluster is no licence on another, where the agent applies it as
 * cluster-admin). A scope naming clusters only covers them and every service on them; one naming services only
 * covers the existing services of those names, never the creation of one: creating a service needs write on its
 * cluster (Plural's model, ../shared/notes/plural-reference.md: a service's write binding is on the cluster). The
 * table of every role × scope × action is in docs/access.md.
 */
export const ROLES = ['admin', 'writer', 'approver', 'reader'] as const;
export type Role = (typeof ROLES)[number];

/** `administer` is the fleet's configuration; the others act on a target. */
export type Action = 'read' | 'write' | 'approve' | 'force' | 'proxy' | 'administer';

export interface ScopeSelector {
  clusters?: string[];
  clusterTags?: Record<string, string>;
  services?: string[];
  pipelines?: string[];
  /**
   * Git repositories (by id or URL) and Helm chart URLs a writer may point services at: the server fetches them
   * with their stored credentials. Only `all` covers every one.
   */
  repositories?: string[];
}
export type Scope = 'all' | ScopeSelector;

export interface Grant {
  role: Role;
  scope: Scope;
}

/** What an action is on; none for fleet-wide reads and administration. */
export interface Target {
  cluster?: { name: string; tags: Record<string, string> };
  service?: { name: string };
  pipeline?: string;
  /** The service does not exist yet and the action makes it: the scope must cover the cluster, not only the name. */
  creating?: boolean;
}

const ROLE_ACTIONS: Record<Role, ReadonlySet<Action>> = {
  admin: new Set(['read', 'write', 'approve', 'force', 'proxy', 'administer']),
  writer: new Set(['read', 'write', 'approve', 'proxy']),
  approver: new Set(['read', 'approve', 'proxy']),
  reader: new Set(['read', 'proxy']),
};

/** Whether any of `grants` allows `action` on `target`. */
export function allows(grants: readonly Grant[], action: Action, target: Target = {}): boolean {
  return grants.some((grant) => ROLE_ACTIONS[grant.role].has(action) && covers(grant.scope, action, target));
}

function covers(scope: Scope, action: Action, target: Target): boolean {
  if (scope === 'all') return true;
  // The fleet's configuration is shared by every cluster, so only an unscoped admin changes it.
  if (action === 'administer') return false;
  if (!target.cluster && !target.service && target.pipeline === undefined) return action === 'read';
  if (target.pipeline !== undefined) return scope.pipelines?.includes(target.pipeline) ?? false;
  const namesClusters = scope.clusters !== undefined || scope.clusterTags !== undefined;
  const clusterCovered = target.cluster !== undefined && coversCluster(scope, target.cluster);
  if (!target.service) {
    // A scope narrowed to some services of the cluster reads the cluster but may not proxy to it: the proxy's
    // Kubernetes groups act on the whole cluster, beyond the services.
    return clusterCovered && (scope.services === undefined || action === 'read');
  }
  if (scope.services !== undefined && !scope.services.includes(target.service.name)) return false;
  if (namesClusters) return clusterCovered;
  // Services by name only: those that exist, on any cluster; making one needs the cluster in scope.
  return scope.services !== undefined && target.creating !== true;
}

/**
 * Whether `grants` let a service be pointed at a source the server fetches: a git repository (`{id, url}`) or a
 * Helm chart URL (`{url}`). Needs a role that writes (writer, admin) bound to `all`, or a scope whose
 * `repositories` names the id or URL (a trailing slash ignored): a binding on a cluster is no right on the
 * repositories' credentials nor on the server's network position.
 */
export function mayUseSource(grants: readonly Grant[], source: { id?: string; url: string }): boolean {
  const trimmed = (url: string) => url.replace(/\/+$/, '');
  return grants.some(
    (grant) =>
      ROLE_ACTIONS[grant.role].has('write') &&
      (grant.scope === 'all' ||
        (grant.scope.repositories ?? []).some((named) => named === source.id || trimmed(named) === trimmed(source.url))),
  );
}

function coversCluster(scope: ScopeSelector, cluster: { name: string; tags: Record<string, string> }): boolean {
  if (scope.clusters?.includes(cluster.name)) return true;
  const tags = Object.entries(scope.clusterTags ?? {});
  return tags.length > 0 && tags.every(([key, value]) => cluster.tags[key] === value);
}

/**
 * The Kubernetes groups a proxied request impersonates on `cluster`, one per role the grants give there
 * (`gantry:admin`, `gantry:writer`, `gantry:approver`, `gantry:reader`); the agent's install binds them to
 * ClusterRoles, so the cluster's own RBAC has the last word.
 */
export function clusterGroups(grants: readonly Grant[], cluster: { name: string; tags: Record<string, string> }): string[] {
  const roles = new Set(grants.filter((grant) => covers(grant.scope, 'proxy', { cluster })).map((grant) => grant.role));
  return ROLES.filter((role) => roles.has(role)).map((role) => `gantry:${role}`);
}
