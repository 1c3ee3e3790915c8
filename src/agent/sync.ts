/**
 * One sync of one service, as `gantry deploy --prune --no-wait` does it, in the agent's cluster: render the
 * service's source fully (a render error applies nothing and keeps what runs), server-side apply with the agent's
 * field manager and the service's discriminator in Kluctl's order, prune what the service no longer renders, and
 * turn the outcome into the report the server stores (one component per rendered object, Plural's component
 * states, whose readiness the agent's health loop keeps following).
 * A deleted service's objects are deleted by its discriminator, never anything it does not own.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AgentReport, AgentService } from '../api/agent.ts';
import { COMPONENT_MESSAGE_MAX } from '../api/services.ts';
import { deployTarget } from '../deploy/deploy.ts';
import { TargetLockedError } from '../deploy/target-lock.ts';
import { prepareTarget } from '../target/prepare.ts';
import type { RenderCache } from '../target/render-cache.ts';
import { deleteByDiscriminator } from '../deploy/prune.ts';
import { targetObjects } from '../target/rendered-target.ts';
import type { CommandResult } from '../deploy/result.ts';
import type { Engine } from '../engine.ts';
import { readinessOf } from '../health/index.ts';
import type { Cluster } from '../kube/cluster.ts';
import { formatRef, type KubeObject, refKey, refOf, splitApiVersion, type ObjectRef } from '../kube/object.ts';
import type { AppliedObjects } from '../deploy/applied-objects.ts';
import type { Progress } from '../progress.ts';
import { normalizedObjects } from './diff-normalizers.ts';
import { rendererFor, serviceDiscriminator, serviceRequest } from './service-project.ts';
import { messageOf } from '../problems.ts';

type Component = AgentReport['components'][number];
type ServiceError = AgentReport['errors'][number];

export interface SyncContext {
  engine: Engine;
  kubeConfig: KubeConfig;
  cluster: Cluster;
  /** Where wrapper projects are written, one folder per service. */
  workDir: string;
  fieldManager: string;
  /** Readiness waits and deletions together, in milliseconds. */
  timeoutMs: number;
  progress: Progress;
  signal: AbortSignal;
  /** What earlier syncs applied, so objects unchanged since are not sent again (Plural's agent skips them too). */
  applied: AppliedObjects;
  /** Earlier renders, reused while a service's source and the cluster reads of its render are unchanged. */
  renders: RenderCache;
}

/** The outcome of a sync: the report to send, and whether the revision was applied (false after a render error). */
export interface SyncOutcome {
  applied: boolean;
  /** Whether the render was an earlier one, reused (see target/render-cache.ts). */
  renderReused?: boolean;
  components: Component[];
  errors: ServiceError[];
  /** The objects applied (rendered, with syncConfig's changes), one per component; none after a render error or a delete. */
  manifests?: KubeObject[];
}

/** Renders and applies the service's source from `sourceDir`. Never throws for the service's own problems. */
export async function syncService(service: AgentService, sourceDir: string, context: SyncContext): Promise<SyncOutcome> {
  const { cluster } = context;
  try {
    if (service.syncConfig?.createNamespace !== false) await ensureNamespace(cluster, service, context.fieldManager);
  } catch (error) {
    if (context.signal.aborted) throw context.signal.reason;
    return { applied: false, components: [], errors: [{ source: 'render', message: messageOf(error) }] };
  }
  const prepared = await prepareService(service, sourceDir, context, path.join(context.workDir, service.id));
  if ('error' in prepared) return { applied: false, components: [], errors: [{ source: 'render', message: prepared.error }] };
  return await applyPrepared(service, prepared, context);
}

/**
 * The service's source from `sourceDir`, rendered fully with syncConfig's changes, its wrapper project written to
 * `workDir`: what a sync applies and a preview dry-runs. It writes nothing to the cluster.
 * @returns the prepared target, or the render error's message (nothing is applied after one).
 */
export async function prepareService(
  service: AgentService,
  sourceDir: string,
  context: SyncContext,
  workDir: string,
): Promise<PreparedTarget | { error: string }> {
  const { engine, kubeConfig, cluster, signal, progress } = context;
  try {
    const renderer = await rendererFor(service, sourceDir);
    const request = await serviceRequest(service, sourceDir, renderer, workDir, kubeConfig.getCurrentContext());
    const enforce = service.syncConfig?.enforceNamespace ?? false;
    const normalizers = service.syncConfig?.diffNormalizers ?? [];
    // Only when the service asks for one, so that a plain render is hashed once.
    const transform =
      enforce || normalizers.length > 0
        ? async (rendered: readonly KubeObject[]): Promise<KubeObject[]> => {
            const objects = enforce ? await enforceNamespace(cluster, rendered, service.namespace) : [...rendered];
            return normalizers.length > 0 ? await normalizedObjects(objects, normalizers, (ref) => cluster.get(ref)) : objects;
          }
        : undefined;
    return await prepareTarget(request, engine, { kubeConfig, progress, signal, renderCache: context.renders, transform });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return { error: messageOf(error) };
  }
}

type PreparedTarget = Awaited<ReturnType<typeof prepareTarget>>;

/** Applies a prepared service with the agent's field manager and discriminator, pruning what it no longer renders. */
async function applyPrepared(service: AgentService, prepared: PreparedTarget, context: SyncContext): Promise<SyncOutcome> {
  const { cluster, signal, progress } = context;
  const result = await deployTarget(prepared.rendered, cluster, {
    // Waits for nobody: a CLI changing the service's objects makes this sync fail, and the next one tries again.
    lock: { holder: `the agent's service ${service.name}`, waitMs: 0 },
    fieldManager: context.fieldManager,
    dryRun: false,
    prune: true,
    // Kluctl's own barrier semantics (apply order only): readiness is watched by the agent's health loop and
    // reported as components settle, so one slow service never holds up the others' syncs.
    wait: false,
    timeoutMs: context.timeoutMs,
    behaviour: {
      forceApply: false,
      replaceOnError: false,
      forceReplaceOnError: false,
      abortOnError: false,
      readinessTimeoutMs: context.timeoutMs,
    },
    progress,
    signal,
    applied: context.applied,
  }).catch((error: unknown) => {
    if (error instanceof TargetLockedError) return error;
    throw error;
  });
  if (result instanceof TargetLockedError) return { applied: false, components: [], errors: [{ source: 'sync', message: result.message }] };
  const manifests = targetObjects(prepared.rendered);
  return {
    applied: true,
    renderReused: prepared.reusedFrom !== undefined,
    components: await componentsOf(cluster, manifests.map(refOf), result),
    errors: resultErrors(result),
    manifests,
  };
}

/** Deletes what the service applied (by its discriminator, owned by the agent only). */
export async function deleteService(service: AgentService, context: SyncContext): Promise<SyncOutcome> {
  const result = await deleteByDiscriminator(context.cluster, serviceDiscriminator(service), {
    fieldManager: context.fieldManager,
    dryRun: false,
    timeoutMs: context.timeoutMs,
    progress: context.progress,
    signal: context.signal,
  });
  return { applied: true, components: [], errors: resultErrors(result).map((error) => ({ ...error, source: 'delete' })) };
}

/**
 * Makes the service's namespace when it is missing, without the service's discriminator: it is never pruned or
 * deleted with the service, since other things may live in it (Plural's createNamespace). With namespaceMetadata its
 * labels and annotations are applied, to a namespace made earlier too.
 */
async function ensureNamespace(cluster: Cluster, service: AgentService, fieldManager: string): Promise<void> {
  const metadata = service.syncConfig?.namespaceMetadata;
  const ref = { group: '', version: 'v1', kind: 'Namespace', namespace: '', name: service.namespace };
  if (!metadata && (await cluster.get(ref))) return;
  await cluster.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: service.namespace, ...metadata } }, { fieldManager });
}

/** Plural's enforceNamespace: every namespaced object of the render goes into the service's namespace (as a copy). */
async function enforceNamespace(cluster: Cluster, objects: readonly KubeObject[], namespace: string): Promise<KubeObject[]> {
  const enforced: KubeObject[] = [];
  for (const object of objects) {
    const { group, version } = splitApiVersion(object.apiVersion);
    const resource = await cluster.discovery.find(group, version, object.kind);
    enforced.push(resource?.namespaced ? { ...object, metadata: { ...object.metadata, namespace } } : object);
  }
  return enforced;
}

/** One component per rendered object: its readiness as the cluster has it now, and whether this sync applied it. */
async function componentsOf(cluster: Cluster, refs: readonly ObjectRef[], result: CommandResult): Promise<Component[]> {
  const failed = new Set(result.errors.flatMap((error) => (error.object ? [refKey(error.object)] : [])));
  return await refreshComponents(
    cluster,
    refs.map((ref) => ({ ...ref, state: 'PENDING', synced: !failed.has(refKey(ref)) })),
  );
}

/**
 * The components' readiness as the cluster has it now (objects keep changing after a sync: pods start, volumes
 * bind); a component whose object is gone is PENDING and no longer synced.
 */
export async function refreshComponents(cluster: Cluster, components: readonly Component[]): Promise<Component[]> {
  return await Promise.all(
    components.map(async (component) => {
      const { state: _state, message: _message, synced, ...ref } = component;
      const live = await cluster.get(ref).catch(() => undefined);
      return { ...ref, ...componentHealthOf(live), synced: live !== undefined && synced } satisfies Component;
    }),
  );
}

/**
 * A component's state from its object's readiness (health/): RUNNING ready, FAILED failed, PENDING otherwise or gone;
 * with the readiness rule's reason as its message while it is not RUNNING (e.g. a Cluster API Cluster's phase and
 * what it waits for), so the server can say why without reading the cluster.
 */
export function componentHealthOf(live: KubeObject | undefined): Pick<Component, 'state' | 'message'> {
  if (!live) return { state: 'PENDING', message: 'not found in the cluster' };
  const readiness = readinessOf(live);
  if (readiness.status === 'Ready') return { state: 'RUNNING' };
  const message = readiness.message.slice(0, COMPONENT_MESSAGE_MAX);
  return { state: readiness.status === 'Failed' ? 'FAILED' : 'PENDING', ...(message === '' ? {} : { message }) };
}

function resultErrors(result: CommandResult): ServiceError[] {
  return result.errors.map((error) => ({
    source: 'sync',
    message: error.object ? `${formatRef(error.object)}: ${error.message}` : error.message,
  }));
}
