/**
 * API discovery: which resources the cluster serves, so a GVK maps to a URL and a scope. Uses aggregated
 * discovery (apidiscovery.k8s.io/v2, two requests for the whole cluster; GA since Kubernetes 1.30) and falls back
 * to per-group discovery for older servers. The mapping is cached for `maxAgeMs` (an API removed meanwhile is noticed
 * then) and invalidated when CRDs change or a kind is unknown (Gantry does so after applying CRDs and on a miss). A
 * Discovery lives as long as its Cluster, so a long-running role asks once per cluster, not once per reconcile.
 */
import type { KubeClient } from './client.ts';
import type { ScopeResolver } from './scope.ts';

/** One resource the cluster serves at one group/version. */
export interface ApiResource {
  group: string;
  version: string;
  kind: string;
  /** Plural resource name used in URLs (`deployments`). */
  resource: string;
  namespaced: boolean;
  verbs: string[];
  /** True for the group's preferred (first listed) version. */
  preferred: boolean;
}

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

interface AggregatedList {
  kind?: string;
  items?: Array<{
    metadata?: { name?: string };
    versions?: Array<{
      version: string;
      resources?: Array<{ resource: string; responseKind?: { kind?: string }; scope?: string; verbs?: string[] }>;
    }>;
  }>;
}

/** How long a mapping is trusted without a miss (client-go's disk cache keeps it for 6 h; a controller wants less). */
const DEFAULT_MAX_AGE_MS = 10 * 60_000;

/**
 * One cluster's discovery cache, read through `client`: concurrent lookups share one read in flight, and a failed
 * read is not kept (the next lookup tries again). `maxAgeMs` defaults to 10 minutes. Holds no connection of its own.
 * @throws (lookups) the client's KubeApiError or ClusterUnreachableError when discovery cannot be read.
 */
export class Discovery {
  private readonly client: KubeClient;
  private readonly mapping: Expiring<ApiResource[]>;
  private readonly version: Expiring<string>;

  constructor(client: KubeClient, options: { maxAgeMs?: number } = {}) {
    this.client = client;
    const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.mapping = new Expiring(maxAgeMs, () => this.load());
    this.version = new Expiring(maxAgeMs, async () => (await this.client.request<{ gitVersion: string }>('GET', '/version')).gitVersion);
  }

  /** How many times the mapping was read from the cluster (each read is two requests with aggregated discovery). */
  get loads(): number {
    return this.mapping.loads;
  }

  /** Every resource of every served group version (subresources excluded). */
  resources(): Promise<ApiResource[]> {
    return this.mapping.get();
  }

  /**
   * The server's version (`gitVersion`, e.g. `v1.35.4`), kept as long as the mapping: an upgraded server is seen
   * after `maxAgeMs` or an invalidate, as a new mapping is.
   */
  serverVersion(): Promise<string> {
    return this.version.get();
  }

  /** Forgets the mapping and the version; the next lookup asks the cluster again. */
  invalidate(): void {
    this.mapping.forget();
    this.version.forget();
  }

  /** The resource serving exactly this group/version/kind, or undefined. */
  async find(group: string, version: string, kind: string): Promise<ApiResource | undefined> {
    return (await this.resources()).find((entry) => entry.group === group && entry.version === version && entry.kind === kind);
  }

  /** Like find, but asks the cluster again once on a miss (a CRD may have just been established). */
  async findFresh(group: string, version: string, kind: string): Promise<ApiResource | undefined> {
    const found = await this.find(group, version, kind);
    if (found) return found;
    this.invalidate();
    return this.find(group, version, kind);
  }

  /** The preferred-version resource of every kind that can be listed (what prune and delete search). */
  async listable(): Promise<ApiResource[]> {
    return (await this.resources()).filter((entry) => entry.preferred && entry.verbs.includes('list'));
  }

  /** A synchronous scope lookup over the current mapping, for rendering. */
  async scopeResolver(): Promise<ScopeResolver> {
    const scopes = new Map((await this.resources()).map((entry) => [`${entry.group}/${entry.kind}`, entry.namespaced]));
    return { isNamespaced: (group, kind) => scopes.get(`${group}/${kind}`) };
  }

  private async load(): Promise<ApiResource[]> {
    const [core, groups] = await Promise.all([
      this.client.request<AggregatedList>('GET', '/api', { accept: AGGREGATED }),
      this.client.request<AggregatedList>('GET', '/apis', { accept: AGGREGATED }),
    ]);
    if (core.kind === 'APIGroupDiscoveryList' && groups.kind === 'APIGroupDiscoveryList')
      return [...fromAggregated(core), ...fromAggregated(groups)];
    return this.loadPerGroup();
  }

  /** Discovery for servers without aggregated discovery: one request per group version. */
  private async loadPerGroup(): Promise<ApiResource[]> {
    const groups = await this.client.request<{
      groups: Array<{ name: string; versions: Array<{ version: string }>; preferredVersion?: { version: string } }>;
    }>('GET', '/apis');
    const paths = [{ group: '', version: 'v1', path: '/api/v1', preferred: true }];
    for (const group of groups.groups) {
      for (const { version } of group.versions)
        paths.push({
          group: group.name,
          version,
          path: `/apis/${group.name}/${version}`,
          preferred: group.preferredVersion?.version === version,
        });
    }
    const lists = await Promise.all(
      paths.map(async (entry) => {
        const list = await this.client.request<{ resources: Array<{ name: string; kind: string; namespaced: boolean; verbs: string[] }> }>(
          'GET',
          entry.path,
        );
        return list.resources
          .filter((resource) => !resource.name.includes('/'))
          .map((resource) => ({
            group: entry.group,
            version: entry.version,
            kind: resource.kind,
            resource: resource.name,
            namespaced: resource.namespaced,
            verbs: resource.verbs,
            preferred: entry.preferred,
          }));
      }),
    );
    return lists.flat();
  }
}

function fromAggregated(list: AggregatedList): ApiResource[] {
  const resources: ApiResource[] = [];
  for (const group of list.items ?? []) {
    for (const [index, version] of (group.versions ?? []).entries()) {
      for (const resource of version.resources ?? []) {
        resources.push({
          group: group.metadata?.name ?? '',
          version: version.version,
          kind: resource.responseKind?.kind ?? '',
          resource: resource.resource,
          namespaced: resource.scope === 'Namespaced',
          verbs: resource.verbs ?? [],
          preferred: index === 0,
        });
      }
    }
  }
  return resources;
}

/** A value read on first use and kept for `maxAgeMs`; a failed read is forgotten, so the next use asks again. */
class Expiring<T> {
  private cached: { value: Promise<T>; at: number } | undefined;
  private loadCount = 0;
  private readonly maxAgeMs: number;
  private readonly read: () => Promise<T>;

  constructor(maxAgeMs: number, read: () => Promise<T>) {
    this.maxAgeMs = maxAgeMs;
    this.read = read;
  }

  get loads(): number {
    return this.loadCount;
  }

  get(): Promise<T> {
    if (this.cached && Date.now() - this.cached.at > this.maxAgeMs) this.cached = undefined;
    if (!this.cached) {
      this.loadCount++;
      const entry = {
        at: Date.now(),
        value: this.read().catch((error: unknown) => {
          if (this.cached === entry) this.cached = undefined;
          throw error;
        }),
      };
      this.cached = entry;
    }
    return this.cached.value;
  }

  forget(): void {
    this.cached = undefined;
  }
}
