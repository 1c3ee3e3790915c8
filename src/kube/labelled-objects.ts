/**
 * Every object of a cluster that carries one label key (Kluctl's discriminator label), kept current by one
 * list+watch per listable resource, as Argo CD's cluster cache keeps the objects it manages. A long-running role
 * that deploys many targets into one cluster then finds a target's objects in memory instead of listing every
 * resource of the cluster for each deploy (61 label-selected lists on a plain cluster, which bound a controller
 * with many deployments by its API rate limit).
 *
 * Reading is consistent with this process's own writes: the role records what it applied and forgets what it
 * deleted (write-through), and a watch event older than the recorded object (by resourceVersion) does not undo it.
 * Writes by others arrive with the watch, typically within milliseconds, and are told to subscribers (an agent
 * reporting drift within seconds). Kinds that appear later (a CRD
 * applied by a deploy) are watched from the first read after discovery saw them; kinds no longer served stop being
 * watched.
 */
import type { KubeClient } from './client.ts';
import { KubeApiError } from './client.ts';
import type { ApiResource, Discovery } from './discovery.ts';
import { refKey, refOf, type KubeObject, type ObjectRef } from './object.ts';
import { Watcher } from './watcher.ts';
import type { Logger } from '../logger.ts';

export interface LabelledObjectsOptions {
  client: KubeClient;
  discovery: Discovery;
  /** The label key every kept object has (any value), e.g. `kluctl.io/discriminator`. */
  labelKey: string;
  log?: Logger;
}

/**
 * A change the watch brought that the cache did not have: `value` is the label's value the object has or had (a
 * relabelled object is told under both), `key` its group/kind/namespace/name, `object` undefined once deleted.
 */
export interface LabelledChange {
  value: string;
  key: string;
  object: KubeObject | undefined;
}

/** List errors that mean "nothing of ours here", as a one-off list tolerates them: forbidden, gone, not listable. */
function isEmptyForUs(error: unknown): boolean {
  return error instanceof KubeApiError && [403, 404, 405].includes(error.status);
}

/**
 * The watched cache of one cluster's objects carrying `labelKey`, indexed by the label's value. Nothing is watched
 * until the first `withValue`, which starts the watches and waits for their first lists; `record` and `forget` are
 * the owner's write-through after its applies and deletes. The Cluster that made it calls close() to stop the
 * watches; reads after that throw.
 */
export class LabelledObjects {
  private readonly options: LabelledObjectsOptions;
  private readonly watchers = new Map<string, Watcher>();
  /** label value → object key (group/kind/namespace/name, any version) → object. */
  private readonly byValue = new Map<string, Map<string, KubeObject>>();
  private readonly valueOf = new Map<string, string>();
  private readonly listeners = new Set<(change: LabelledChange) => void>();
  private closed = false;

  constructor(options: LabelledObjectsOptions) {
    this.options = options;
  }

  /** How many resources are watched. */
  get watched(): number {
    return this.watchers.size;
  }

  /**
   * Every object whose label has `value`, once each served resource was listed (copies: callers may change them).
   * @throws the error of a resource whose first list failed (as a one-off list would fail; its watch keeps retrying,
   *   so a later read may succeed); Error after close.
   */
  async withValue(value: string): Promise<KubeObject[]> {
    if (this.closed) throw new Error('the labelled-object cache is closed');
    // A resource that can be listed but not watched (metrics.k8s.io) serves nothing a deploy could have made.
    await this.watchServed((await this.options.discovery.listable()).filter((resource) => resource.verbs.includes('watch')));
    return [...(this.byValue.get(value)?.values() ?? [])].map((object) => structuredClone(object));
  }

  /**
   * Calls `listener` synchronously for each change the watch brings that differs from what is kept: writes and
   * deletes by others, and the first lists of a watch. The echo of this process's own write is told only when it
   * beats the write's answer (`record`, `forget`), so a subscriber compares what it is told with what it expects.
   * A throwing listener is not caught: it must not throw.
   * @returns the unsubscribe function.
   */
  subscribe(listener: (change: LabelledChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes in an object this process applied (the API server's answer), so the next read sees it at once. */
  record(object: KubeObject): void {
    this.putUnlessOlder(object);
  }

  /** Drops an object this process deleted, so the next read does not find it again. */
  forget(ref: ObjectRef): void {
    this.change(refKey(ref), undefined);
  }

  /** Stops every watch. */
  async close(): Promise<void> {
    this.closed = true;
    const watches = [...this.watchers.values()];
    this.watchers.clear();
    await Promise.all(watches.map((watcher) => watcher.stop()));
  }

  /** Starts a watch for each served resource not yet watched, stops those no longer served, waits for all to list. */
  private async watchServed(served: readonly ApiResource[]): Promise<void> {
    const wanted = new Map(served.map((resource) => [`${resource.group}/${resource.version}/${resource.resource}`, resource]));
    for (const [id, watcher] of this.watchers) {
      if (wanted.has(id)) continue;
      this.watchers.delete(id);
      void watcher.stop();
    }
    for (const [id, resource] of wanted) {
      if (!this.watchers.has(id)) this.watchers.set(id, this.startWatch(resource));
    }
    // A read fails as a one-off list would (listed()) instead of waiting through the watch's retries.
    await Promise.all([...this.watchers.values()].map((watcher) => watcher.listed()));
  }

  private startWatch(resource: ApiResource): Watcher {
    const watcher = new Watcher({
      client: this.options.client,
      resource: { group: resource.group, version: resource.version, plural: resource.resource },
      labelSelector: this.options.labelKey,
      log: this.options.log?.child({ resource: `${resource.resource}.${resource.group}` }),
      syncedDespite: isEmptyForUs,
      onChange: (_key, object, previous) => {
        if (object) this.putUnlessOlder(object, true);
        else if (previous) this.deleteWatched(previous);
      },
    });
    watcher.start();
    return watcher;
  }

  /** An add or update, unless what is kept is newer (a write's answer and the watch can arrive in either order). */
  private putUnlessOlder(object: KubeObject, watched = false): void {
    const key = refKey(refOf(object));
    const kept = this.kept(key);
    if (kept && isOlder(object, kept)) return;
    const told = watched && kept?.metadata.resourceVersion !== object.metadata.resourceVersion;
    const oldValue = this.valueOf.get(key);
    this.change(key, object);
    if (told) this.tell(key, object, oldValue);
  }

  /** A watched delete, unless what is kept is another incarnation (recreated under the same name since). */
  private deleteWatched(previous: KubeObject): void {
    const key = refKey(refOf(previous));
    if (this.kept(key)?.metadata.uid !== previous.metadata.uid) return;
    const oldValue = this.valueOf.get(key);
    this.change(key, undefined);
    this.tell(key, undefined, oldValue);
  }

  private tell(key: string, object: KubeObject | undefined, oldValue: string | undefined): void {
    if (this.listeners.size === 0) return;
    const newValue = object?.metadata.labels?.[this.options.labelKey];
    for (const value of new Set([oldValue, newValue])) {
      if (value === undefined) continue;
      for (const listener of this.listeners) listener({ value, key, object });
    }
  }

  private kept(key: string): KubeObject | undefined {
    const value = this.valueOf.get(key);
    return value === undefined ? undefined : this.byValue.get(value)?.get(key);
  }

  /** Puts the object under key (or, with undefined, removes it), indexed by its label's value. */
  private change(key: string, object: KubeObject | undefined): void {
    const oldValue = this.valueOf.get(key);
    if (oldValue !== undefined) {
      const objects = this.byValue.get(oldValue);
      objects?.delete(key);
      // Discriminators come and go with their deployments: an emptied one is not kept.
      if (objects?.size === 0) this.byValue.delete(oldValue);
      this.valueOf.delete(key);
    }
    const value = object?.metadata.labels?.[this.options.labelKey];
    if (object === undefined || value === undefined) return;
    let objects = this.byValue.get(value);
    if (!objects) this.byValue.set(value, (objects = new Map()));
    objects.set(key, object);
    this.valueOf.set(key, value);
  }
}

/**
 * True when `object` is an older state than `kept`. resourceVersions are opaque to clients by the API's rules, but
 * every API server backed by etcd issues them from one increasing revision counter; anything else counts as newer.
 */
function isOlder(object: KubeObject, kept: KubeObject): boolean {
  const next = object.metadata.resourceVersion ?? '';
  const current = kept.metadata.resourceVersion ?? '';
  if (!/^\d+$/.test(next) || !/^\d+$/.test(current)) return false;
  return BigInt(next) < BigInt(current);
}
