/**
 * One connected cluster: the dynamic operations Gantry needs on any kind (built-in or CRD), addressed by GVK
 * through discovery. Server-side apply sends the object as rendered (PATCH application/apply-patch+yaml, JSON
 * being valid YAML) with strict field validation, so the API server rejects unknown fields instead of dropping them.
 */
import { KubeClient, KubeApiError, loadKubeConfig, type ConnectOptions } from './client.ts';
import { Discovery, type ApiResource } from './discovery.ts';
import { LabelledObjects } from './labelled-objects.ts';
import { formatRef, refOf, type KubeObject, type ObjectRef } from './object.ts';

/** The cluster serves no resource for a GVK (its CRD is missing, or the version is not served). */
export class UnknownKindError extends Error {
  constructor(group: string, version: string, kind: string) {
    super(`the cluster serves no ${group ? `${group}/` : ''}${version} ${kind} (is its CustomResourceDefinition installed?)`);
    this.name = 'UnknownKindError';
  }
}

export interface ApplyOptions {
  fieldManager: string;
  /** Take ownership of fields other managers own instead of failing with a conflict. */
  force?: boolean;
}

/** Accept header of a metadata-only list: the API server answers a PartialObjectMetadataList. */
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/**
 * One cluster as one kubeconfig context reaches it: a client (connection pool, throttle), and the discovery cache.
 * Long-running roles keep one per context in a ClusterPool (cluster-pool.ts) and bind each operation's signal with
 * withSignal.
 */
export class Cluster {
  readonly client: KubeClient;
  readonly discovery: Discovery;
  /**
   * The watched cache of objects carrying a label key (see labelled-objects.ts), when the role asked for one; every
   * write through this Cluster is recorded in it.
   */
  readonly labelled: LabelledObjects | undefined;
  /** The kubeconfig context in use. */
  readonly context: string;
  /**
   * Every write through this view is a server-side dry run, and its client refuses any write that is not (see
   * dryRun()): the one way to ask for a dry run, as Kluctl's K8sCluster is made for one.
   */
  readonly isDryRun: boolean;

  /**
   * @param shared what the cluster this one is a signal-bound view of shares with it (see withSignal); or, for a
   *   new cluster, `watchLabel`: the label key to keep a watched cache of objects for.
   */
  constructor(
    client: KubeClient,
    shared: { discovery?: Discovery; labelled?: LabelledObjects; watchLabel?: string; dryRun?: boolean } = {},
  ) {
    this.isDryRun = shared.dryRun ?? false;
    this.client = this.isDryRun ? client.dryRunOnly() : client;
    this.discovery = shared.discovery ?? new Discovery(client);
    this.labelled =
      shared.labelled ??
      (shared.watchLabel === undefined
        ? undefined
        : new LabelledObjects({ client, discovery: this.discovery, labelKey: shared.watchLabel }));
    this.context = client.config.getCurrentContext();
  }

  /** Connects using the kubeconfig rules, unpooled and unthrottled (one-shot commands); nothing is sent yet. */
  static connect(options: ConnectOptions = {}): Cluster {
    return new Cluster(new KubeClient(loadKubeConfig(options)));
  }

  /**
   * This cluster with `signal` on every request: connections, throttle and discovery are shared, and a request
   * under way when the signal fires is abandoned (rejecting with the signal's reason).
   */
  withSignal(signal: AbortSignal | undefined): Cluster {
    return signal ? new Cluster(this.client.withSignal(signal), this.shared()) : this;
  }

  /**
   * This cluster for a dry run: every apply, replace, patch, create and delete is sent as a server-side dry run (the
   * API server validates, defaults and answers), so
   * the API server validates and answers and persists nothing, and a write without dryRun never leaves the process.
   * Connections, throttle, discovery and the labelled-object cache are shared (dry-run answers are not recorded in it).
   */
  dryRun(): Cluster {
    return this.isDryRun ? this : new Cluster(this.client, { ...this.shared(), dryRun: true });
  }

  private shared(): { discovery: Discovery; labelled: LabelledObjects | undefined; dryRun: boolean } {
    return { discovery: this.discovery, labelled: this.labelled, dryRun: this.isDryRun };
  }

  /** Stops the labelled-object cache's watches and closes the connections; the views withSignal made share them. */
  async close(): Promise<void> {
    await this.labelled?.close();
    await this.client.close();
  }

  /** The server's version, e.g. `v1.35.4`, cached with the discovery mapping. */
  version(): Promise<string> {
    return this.discovery.serverVersion();
  }

  /**
   * Server-side applies `object` and returns the object as the server stored (or, dry-run, would store) it.
   * @throws UnknownKindError, or KubeApiError (409 Conflict for field conflicts, 422 Invalid for rejected objects).
   */
  async apply(object: KubeObject, options: ApplyOptions): Promise<KubeObject> {
    const path = await this.objectPath(refOf(object));
    const applied = await this.client.request<KubeObject>('PATCH', path, {
      body: object,
      contentType: 'application/apply-patch+yaml',
      query: {
        fieldManager: options.fieldManager,
        force: options.force ? 'true' : undefined,
        dryRun: this.dryRunQuery(),
        fieldValidation: 'Strict',
      },
    });
    return this.written(applied);
  }

  /**
   * Replaces the object (PUT) as of `resourceVersion`, for fields server-side apply cannot change.
   * @throws KubeApiError (409 when the object changed since `resourceVersion`).
   */
  async replace(object: KubeObject, resourceVersion: string, options: { fieldManager: string }): Promise<KubeObject> {
    const body = { ...object, metadata: { ...object.metadata, resourceVersion } };
    const replaced = await this.client.request<KubeObject>('PUT', await this.objectPath(refOf(object)), {
      body,
      query: { fieldManager: options.fieldManager, dryRun: this.dryRunQuery(), fieldValidation: 'Strict' },
    });
    return this.written(replaced);
  }

  /**
   * Changes single fields with a JSON patch (RFC 6902), leaving every other field and its ownership alone.
   * @throws KubeApiError when a path does not exist or the result is invalid.
   */
  async patchJson(
    ref: ObjectRef,
    operations: ReadonlyArray<{ op: 'replace' | 'add'; path: string; value: unknown }>,
    options: { fieldManager: string; subresource?: 'status' },
  ): Promise<KubeObject> {
    const suffix = options.subresource ? `/${options.subresource}` : '';
    const patched = await this.client.request<KubeObject>('PATCH', `${await this.objectPath(ref)}${suffix}`, {
      body: operations,
      contentType: 'application/json-patch+json',
      query: { fieldManager: options.fieldManager, dryRun: this.dryRunQuery() },
    });
    return this.written(patched);
  }

  /**
   * JSON merge patch (RFC 7386) of the object or of its `status` subresource. Including
   * `metadata.resourceVersion` in the patch makes it conditional (409 when the object changed meanwhile).
   */
  async patchMerge(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    options: { fieldManager: string; subresource?: 'status' },
  ): Promise<KubeObject> {
    const suffix = options.subresource ? `/${options.subresource}` : '';
    const patched = await this.client.request<KubeObject>('PATCH', `${await this.objectPath(ref)}${suffix}`, {
      body: patch,
      contentType: 'application/merge-patch+json',
      query: { fieldManager: options.fieldManager, dryRun: this.dryRunQuery() },
    });
    return this.written(patched);
  }

  /** Creates an object (POST), e.g. an Event with a generated name. */
  async create(object: KubeObject, options: { fieldManager: string }): Promise<KubeObject> {
    const ref = refOf(object);
    const resource = await this.resourceFor(ref);
    const created = await this.client.request<KubeObject>(
      'POST',
      collectionPath(resource, resource.namespaced ? ref.namespace : undefined),
      {
        body: object,
        query: { fieldManager: options.fieldManager, dryRun: this.dryRunQuery() },
      },
    );
    return this.written(created);
  }

  /** The object, or undefined when it does not exist (or its kind is not served). */
  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    try {
      return await this.client.request<KubeObject>('GET', await this.objectPath(ref));
    } catch (error) {
      if (error instanceof UnknownKindError || (error instanceof KubeApiError && error.status === 404)) return undefined;
      throw error;
    }
  }

  /**
   * Every object of `resource` matching `labelSelector`, in `namespace` or (without one) in all namespaces,
   * with apiVersion and kind filled in (list responses leave them out of the items). With `metadataOnly` the
   * objects have their metadata only (labels, annotations, managedFields, ownerReferences), a fraction of the bytes.
   */
  async list(
    resource: ApiResource,
    labelSelector: string,
    namespace?: string,
    options: { metadataOnly?: boolean } = {},
  ): Promise<KubeObject[]> {
    const items: KubeObject[] = [];
    let continueToken: string | undefined;
    do {
      const page = await this.client.request<{ items: KubeObject[] | null; metadata?: { continue?: string } }>(
        'GET',
        collectionPath(resource, namespace),
        {
          query: { labelSelector, limit: '500', continue: continueToken },
          accept: options.metadataOnly ? METADATA_LIST : undefined,
        },
      );
      const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
      // A metadata-only list of nothing has no items at all (null), not an empty list.
      for (const item of page.items ?? []) items.push({ ...item, apiVersion, kind: resource.kind });
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return items;
  }

  /**
   * Deletes the object (dependents in the background, as kubectl does); an object already gone is not an error.
   * The dry run is asked for in the DeleteOptions body: the API server ignores a DELETE's query parameters whenever
   * it has a body (k8s.io/apiserver, endpoints/handlers/delete.go), so `?dryRun=All` beside a body deletes for real.
   * @returns false when the object did not exist.
   */
  async delete(ref: ObjectRef): Promise<boolean> {
    try {
      await this.client.request('DELETE', await this.objectPath(ref), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', dryRun: this.isDryRun ? ['All'] : undefined },
      });
      if (!this.isDryRun) this.labelled?.forget(ref);
      return true;
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
      if (!this.isDryRun) this.labelled?.forget(ref);
      return false;
    }
  }

  /** The resource for a ref's GVK, asking discovery again once on a miss. */
  async resourceFor(ref: Pick<ObjectRef, 'group' | 'version' | 'kind'>): Promise<ApiResource> {
    const resource = await this.discovery.findFresh(ref.group, ref.version, ref.kind);
    if (!resource) throw new UnknownKindError(ref.group, ref.version, ref.kind);
    return resource;
  }

  /** A write's answer, recorded in the labelled-object cache unless it was a dry run. */
  private written(object: KubeObject): KubeObject {
    if (!this.isDryRun) this.labelled?.record(object);
    return object;
  }

  /** The `dryRun` query parameter of a write (never a DELETE's: see delete). */
  private dryRunQuery(): 'All' | undefined {
    return this.isDryRun ? 'All' : undefined;
  }

  /** The API path of the object `ref` names. @throws UnknownKindError; Error for a namespaced ref without namespace. */
  async objectPath(ref: ObjectRef): Promise<string> {
    const resource = await this.resourceFor(ref);
    if (resource.namespaced && !ref.namespace) throw new Error(`${formatRef(ref)}: a namespaced object needs a namespace`);
    return `${collectionPath(resource, resource.namespaced ? ref.namespace : undefined)}/${encodeURIComponent(ref.name)}`;
  }
}

function collectionPath(resource: ApiResource, namespace: string | undefined): string {
  const base = resource.group ? `/apis/${resource.group}/${resource.version}` : `/api/${resource.version}`;
  return `${base}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${resource.resource}`;
}
