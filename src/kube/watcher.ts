/**
 * List+watch of one resource, keeping a cache of its objects by key and reporting every add, update and delete.
 *
 * The stream itself is @kubernetes/client-node's `Watch`; the list goes through our KubeClient (raw JSON). The
 * library's ListWatch is not used because of its known weaknesses: it stops for good after a watch error other
 * than 410 or a client timeout, and relists on 410 at once, without jitter. This loop, like client-go's reflector:
 * - lists (paginated), then watches from the list's resourceVersion with bookmarks and a server-side timeout of
 *   5–10 minutes (random, as the reflector picks), and watches on from the last resourceVersion when it closes;
 * - relists after a watch or list error (exponential backoff 1 s … 30 s with jitter; a watch that closes within a
 *   second without an event counts as an error, as in client-go), after `410 Gone` (an expired resourceVersion),
 *   and when the staleness watchdog finds the stream silent (no event and no bookmark) for `staleAfterMs`: a
 *   connection can die without closing, and the API server sends a bookmark about once a minute;
 * - reports on relist only objects that really changed (a new resourceVersion) or disappeared, so a reconnect does
 *   not reconcile everything again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Watch } from '@kubernetes/client-node';
import type { KubeClient } from './client.ts';
import type { KubeObject } from '../kube/object.ts';
import type { Logger } from '../logger.ts';

/** A resource as the API serves it: group ('' for core), version and plural name, e.g. `{ '', 'v1', 'configmaps' }`. */
export interface WatchedResource {
  group: string;
  version: string;
  plural: string;
}

/** Called for every add or update (with the object) and delete (undefined) of the key `namespace/name`. */
/** `object` is undefined once deleted; `previous` is the cached object before this change, if any. */
export type ChangeHandler = (key: string, object: KubeObject | undefined, previous: KubeObject | undefined) => void;

export interface WatcherOptions {
  client: KubeClient;
  resource: WatchedResource;
  onChange: ChangeHandler;
  /** Where list/watch failures and relists are told; nowhere when absent (the deploy engine prints nothing). */
  log?: Logger;
  /** Watch one namespace only; all namespaces when absent (Flux's `--watch-all-namespaces`). */
  namespace?: string;
  /** Only objects matching this label selector (Flux's `--watch-label-selector`). */
  labelSelector?: string;
  /** Relist when the stream was silent (no event, no bookmark) this long. Default 3 min (three bookmark periods). */
  staleAfterMs?: number;
  /**
   * A first list failing with an error this accepts (e.g. 403 for a resource the role may not read) counts as synced
   * with nothing in it, so waitForSync does not wait for a list that may never succeed; the watcher keeps retrying.
   */
  syncedDespite?: (error: unknown) => boolean;
}

const DEFAULT_STALE_AFTER_MS = 3 * 60_000;
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** A relist that is not a retry after an error (410, stale stream) still waits a little, so replicas spread out. */
const RELIST_DELAY_MS = 1000;
const MIN_WATCH_TIMEOUT_SECONDS = 300;
const SHORT_WATCH_MS = 1000;
const LIST_PAGE_SIZE = '500';
/** A list page that takes longer has met a dead connection (nothing else would end it). */
const LIST_PAGE_TIMEOUT_MS = 60_000;

/** The cache key of an object: `namespace/name`, or `name` for a cluster-scoped object (client-go's rule). */
export function objectKey(object: KubeObject): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}

/** Splits a key made by objectKey into namespace ('' when cluster-scoped) and name. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** `delayMs` spread randomly over [0.5, 1.5) of itself. */
function jittered(delayMs: number): number {
  return Math.round(delayMs * (0.5 + Math.random()));
}

type WatchEnd = 'closed' | 'gone' | 'stale' | 'stopped';

/** A watch stream that ended with an error (connection lost, HTTP error, an ERROR event other than 410). */
class WatchFailed extends Error {
  constructor(cause: unknown) {
    super(`watch failed: ${cause instanceof Error ? cause.message : JSON.stringify(cause)}`);
    this.name = 'WatchFailed';
  }
}

interface ListPage {
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/**
 * One resource's list+watch loop and cache, keyed by objectKey. Nothing runs until start(); the owner calls stop()
 * once, and a stopped watcher does not start again. `onChange` is called synchronously, one change at a time, after
 * the cache took the change in; a handler that throws is logged, not retried. The cache is the watcher's own: read it,
 * do not change it.
 */
export class Watcher {
  private readonly options: WatcherOptions;
  private readonly objects = new Map<string, KubeObject>();
  private readonly watch: Watch;
  private readonly stopping = new AbortController();
  private resourceVersion: string | undefined;
  private kind: string | undefined;
  private running: Promise<void> | undefined;
  private syncedFlag = false;
  private readonly syncedPromise: Promise<void>;
  private markSynced!: () => void;
  /** The error of the latest list that failed before the first sync; undefined while none did. */
  private listError: unknown;
  /** Rejects the pending `listed()` calls. */
  private readonly listWaiters = new Set<(error: unknown) => void>();

  constructor(options: WatcherOptions) {
    this.options = options;
    this.watch = new Watch(options.client.config);
    // The library aborts a stream after 30 s without data, shorter than the API server's bookmark period; the
    // staleness watchdog below takes that role, so the library's own timer is pushed beyond it.
    (this.watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = this.staleAfterMs + 30_000;
    this.syncedPromise = new Promise((resolve) => (this.markSynced = resolve));
  }

  /** The objects by key, as of the last event; empty until the first list. */
  get cache(): ReadonlyMap<string, KubeObject> {
    return this.objects;
  }

  /** True once the first list has filled the cache. */
  get synced(): boolean {
    return this.syncedFlag;
  }

  /** Resolves once the first list has filled the cache (and every object in it was reported). */
  waitForSync(): Promise<void> {
    return this.syncedPromise;
  }

  /**
   * Resolves once the first list has filled the cache, as waitForSync; until then it fails as a one-off list would:
   * it rejects with the error of the latest list that failed, or, when none failed yet, with the next one's. The
   * watch keeps retrying, so a later call may resolve. Rejects when the watch stops first.
   */
  listed(): Promise<void> {
    if (this.syncedFlag) return Promise.resolve();
    if (this.listError !== undefined) return Promise.reject(this.listError);
    return new Promise((resolve, reject) => {
      this.listWaiters.add(reject);
      void this.syncedPromise.then(() => {
        this.listWaiters.delete(reject);
        resolve();
      });
    });
  }

  /** Starts listing and watching in the background; errors are logged and retried, never thrown. */
  start(): void {
    this.running ??= this.run();
  }

  /** Stops the watch and resolves once nothing runs any more. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.failListWaiters(new Error(`the watch of ${this.options.resource.plural} stopped`));
    await this.running;
  }

  private get staleAfterMs(): number {
    return this.options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  }

  private get signal(): AbortSignal {
    return this.stopping.signal;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.signal.aborted) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        const end = await this.watchOnce(this.resourceVersion ?? '', () => (failures = 0));
        if (end === 'closed') {
          failures = 0;
          continue;
        }
        if (end === 'stopped') break;
        this.resourceVersion = undefined;
        const delayMs = jittered(RELIST_DELAY_MS);
        this.options.log?.info(
          { reason: end === 'gone' ? 'resourceVersion expired (410 Gone)' : `no event or bookmark for ${this.staleAfterMs} ms`, delayMs },
          'relisting',
        );
        await this.pause(delayMs);
      } catch (error) {
        if (this.signal.aborted) break;
        if (!this.syncedFlag) {
          if (this.options.syncedDespite?.(error)) this.markSyncedOnce();
          else this.failListWaiters((this.listError = error));
        }
        failures++;
        this.resourceVersion = undefined;
        const delayMs = jittered(Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (failures - 1)));
        this.options.log?.warn({ err: error, failures, delayMs }, 'list/watch failed; relisting after a delay');
        await this.pause(delayMs);
      }
    }
  }

  /** Lists every object, replaces the cache and reports what changed since the cache was last filled. */
  private async relist(): Promise<void> {
    const items: KubeObject[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.options.client.request<ListPage>('GET', this.path(), {
        query: { labelSelector: this.options.labelSelector, limit: LIST_PAGE_SIZE, continue: continueToken },
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(LIST_PAGE_TIMEOUT_MS)]),
      });
      this.kind ??= page.kind?.replace(/List$/, '');
      items.push(...(page.items ?? []));
      resourceVersion = page.metadata?.resourceVersion ?? '';
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    const { group, version } = this.options.resource;
    const apiVersion = group ? `${group}/${version}` : version;
    const listed = new Map(items.map((item) => [objectKey(item), { ...item, apiVersion, kind: this.kind ?? '' } as KubeObject]));
    for (const [key, previous] of this.objects) {
      if (!listed.has(key)) this.remove(key, previous);
    }
    for (const [key, object] of listed) this.put(key, object);
    this.resourceVersion = resourceVersion;
    this.options.log?.debug({ objects: listed.size, resourceVersion }, 'listed');
    this.markSyncedOnce();
  }

  private failListWaiters(error: unknown): void {
    for (const reject of this.listWaiters) reject(error);
    this.listWaiters.clear();
  }

  private markSyncedOnce(): void {
    if (this.syncedFlag) return;
    this.syncedFlag = true;
    this.markSynced();
  }

  /**
   * Watches from `resourceVersion` until the stream ends: normally ('closed', the server-side timeout), with an
   * expired resourceVersion ('gone'), silent for too long ('stale'), or on stop ('stopped').
   * @throws WatchFailed for any other end.
   */
  private watchOnce(resourceVersion: string, onHealthy: () => void): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve, reject) => {
      let connection: AbortController | undefined;
      let ended = false;
      let watchdog: ReturnType<typeof setTimeout> | undefined;
      const end = (outcome: WatchEnd | WatchFailed) => {
        if (ended) return;
        ended = true;
        clearTimeout(watchdog);
        this.signal.removeEventListener('abort', onStop);
        connection?.abort();
        if (outcome instanceof WatchFailed) reject(outcome);
        else resolve(outcome);
      };
      const onStop = () => end('stopped');
      const feedWatchdog = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => end('stale'), this.staleAfterMs);
      };
      if (this.signal.aborted) return end('stopped');
      const startedAt = Date.now();
      let events = 0;
      this.signal.addEventListener('abort', onStop);
      feedWatchdog();
      const query = {
        allowWatchBookmarks: true,
        resourceVersion,
        timeoutSeconds: MIN_WATCH_TIMEOUT_SECONDS + Math.floor(Math.random() * MIN_WATCH_TIMEOUT_SECONDS),
        labelSelector: this.options.labelSelector,
      };
      const onEvent = (type: string, object: KubeObject & WatchStatus) => {
        if (ended) return;
        feedWatchdog();
        if (type === 'ERROR') return end(object.code === 410 ? 'gone' : new WatchFailed(object));
        events++;
        onHealthy();
        this.applyEvent(type, object);
      };
      const onDone = (error: unknown) => {
        // client-go's reflector rule: a watch closed within a second without an event is broken, not done.
        if (!error && events === 0 && Date.now() - startedAt < SHORT_WATCH_MS)
          return end(new WatchFailed('very short watch: closed within a second without an event'));
        if (!error) return end('closed');
        end((error as { statusCode?: number }).statusCode === 410 ? 'gone' : new WatchFailed(error));
      };
      this.watch.watch(this.path(), query, onEvent, onDone).then(
        (controller) => {
          connection = controller;
          if (ended) controller.abort();
        },
        (error: unknown) => end(new WatchFailed(error)),
      );
    });
  }

  private applyEvent(type: string, object: KubeObject): void {
    const resourceVersion = object.metadata?.resourceVersion;
    if (type === 'BOOKMARK') {
      if (resourceVersion) this.resourceVersion = resourceVersion;
      return;
    }
    const key = objectKey(object);
    if (type === 'ADDED' || type === 'MODIFIED') this.put(key, object);
    else if (type === 'DELETED') this.remove(key, this.objects.get(key));
    if (resourceVersion) this.resourceVersion = resourceVersion;
  }

  private put(key: string, object: KubeObject): void {
    const previous = this.objects.get(key);
    if (previous && previous.metadata.resourceVersion === object.metadata.resourceVersion) return;
    this.objects.set(key, object);
    this.notify(key, object, previous);
  }

  private remove(key: string, previous: KubeObject | undefined): void {
    if (!previous) return;
    this.objects.delete(key);
    this.notify(key, undefined, previous);
  }

  /** A failing handler is a bug to log, not a reason to drop the stream (the library would swallow it silently). */
  private notify(key: string, object: KubeObject | undefined, previous: KubeObject | undefined): void {
    try {
      this.options.onChange(key, object, previous);
    } catch (error) {
      this.options.log?.error({ err: error, key }, 'change handler failed');
    }
  }

  private pause(delayMs: number): Promise<void> {
    return sleep(delayMs, undefined, { signal: this.signal }).catch(() => undefined);
  }

  private path(): string {
    const { group, version, plural } = this.options.resource;
    const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const namespace = this.options.namespace ? `/namespaces/${encodeURIComponent(this.options.namespace)}` : '';
    return `${base}${namespace}/${plural}`;
  }
}
