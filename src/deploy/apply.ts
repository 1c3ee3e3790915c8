/**
 * Applying a rendered project, in Kluctl's order with Gantry's readiness waits:
 * 1. every Namespace and CustomResourceDefinition of the whole project first (CRDs until Established), so no item
 *    waits for a namespace or kind that another item creates;
 * 2. items in parallel, 8 at a time, objects of one item in their rendered order, each with server-side apply;
 * 3. at each barrier, and at the end, wait until everything applied so far is ready (Kluctl's barrier only waits
 *    for the apply; waiting for readiness too is what a barrier is usually meant for).
 * Each object is compared with its state before the run: not there before → new; otherwise a non-empty diff →
 * changed. Failures are recorded per object and the run goes on, as Kluctl does.
 */
import pLimit from 'p-limit';
import type { Cluster } from '../kube/cluster.ts';
import { UnknownKindError } from '../kube/cluster.ts';
import { KubeApiError } from '../kube/client.ts';
import { refKey, refOf, splitApiVersion, type KubeObject, type ObjectRef } from '../kube/object.ts';
import type { RenderedItem } from '../render/render-project.ts';
import type { Progress } from '../progress.ts';
import { diffObjects } from './diff.ts';
import type { RemoteObjects } from './remote-objects.ts';
import type { ResultCollector } from './result.ts';
import { isWaitedFor, waitForReadiness } from './wait.ts';

export interface ApplyContext {
  cluster: Cluster;
  fieldManager: string;
  /** Server-side dry run: nothing is persisted and nothing is waited for. */
  dryRun: boolean;
  /** Wait for readiness at barriers and at the end. */
  wait: boolean;
  /** Epoch milliseconds by which every wait must end. */
  deadline: number;
  remote: RemoteObjects;
  result: ResultCollector;
  progress: Progress;
}

/** Applies `items` and records new, changed and failed objects in `context.result`. */
export async function applyItems(items: readonly RenderedItem[], context: ApplyContext): Promise<void> {
  const run = new ApplyRun(context, items);
  await run.applyEarlyObjects();
  for (const group of splitAtBarriers(items)) {
    await run.applyGroup(group);
  }
}

/** Groups of items that may run together: each barrier closes the group it belongs to. */
export function splitAtBarriers(items: readonly RenderedItem[]): RenderedItem[][] {
  const groups: RenderedItem[][] = [[]];
  for (const item of items) {
    (groups[groups.length - 1] as RenderedItem[]).push(item);
    if (item.item.barrier) groups.push([]);
  }
  return groups.filter((group) => group.length > 0);
}

function isEarlyObject(object: KubeObject): boolean {
  const { group } = splitApiVersion(object.apiVersion);
  return (group === '' && object.kind === 'Namespace') || (group === 'apiextensions.k8s.io' && object.kind === 'CustomResourceDefinition');
}

class ApplyRun {
  private readonly context: ApplyContext;
  private readonly items: readonly RenderedItem[];
  private readonly applied = new Set<string>();
  /** Namespaces this run creates; in a dry run they do not exist yet, which the server would reject. */
  private readonly plannedNamespaces = new Set<string>();
  /** Kinds declared by CRDs of this run, which a dry run cannot send to a server that does not know them yet. */
  private readonly plannedKinds = new Set<string>();

  constructor(context: ApplyContext, items: readonly RenderedItem[]) {
    this.context = context;
    this.items = items;
    for (const object of items.flatMap((item) => item.objects)) {
      if (object.kind === 'Namespace') this.plannedNamespaces.add(object.metadata.name ?? '');
      const spec = object['spec'] as { group?: string; names?: { kind?: string } } | undefined;
      if (object.kind === 'CustomResourceDefinition' && spec?.group && spec.names?.kind) this.plannedKinds.add(`${spec.group}/${spec.names.kind}`);
    }
  }

  async applyEarlyObjects(): Promise<void> {
    const early = this.items.flatMap((item) => item.objects.filter(isEarlyObject));
    if (early.length === 0) return;
    this.context.progress.step('apply', `applying ${early.length} Namespace/CRD object(s) first`);
    const refs: ObjectRef[] = [];
    for (const object of early.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))) {
      if (await this.applyObject(object)) refs.push(refOf(object));
    }
    const crds = refs.filter((ref) => ref.kind === 'CustomResourceDefinition');
    if (crds.length > 0 && !this.context.dryRun) await this.waitFor(crds, 'CRDs to be established');
    this.context.cluster.discovery.invalidate();
  }

  async applyGroup(group: readonly RenderedItem[]): Promise<void> {
    const limit = pLimit(8);
    const applied = await Promise.all(group.map((item) => limit(() => this.applyItem(item))));
    const barrier = group[group.length - 1]?.item;
    if (barrier?.barrier) this.context.progress.step('barrier', barrier.message ?? 'waiting for everything before the barrier');
    const toWait = applied.flat();
    if (this.context.wait && !this.context.dryRun && toWait.length > 0) await this.waitFor(toWait, 'readiness');
  }

  /** Applies one item's objects in order; returns the refs to wait for. */
  private async applyItem(rendered: RenderedItem): Promise<ObjectRef[]> {
    const objects = rendered.objects.filter((object) => !this.applied.has(refKey(refOf(object))));
    const scope = rendered.item.relDir ?? '<barrier>';
    if (objects.length === 0) return [];
    this.context.progress.step(scope, `applying ${objects.length} object(s)`);
    const waitFor: ObjectRef[] = [];
    for (const object of objects) {
      if ((await this.applyObject(object)) && isWaitedFor(object)) waitFor.push(refOf(object));
    }
    this.context.progress.step(scope, `applied ${objects.length} object(s)`);
    return waitFor;
  }

  /** Applies one object and records the outcome; returns false when it failed. */
  private async applyObject(object: KubeObject): Promise<boolean> {
    const ref = refOf(object);
    this.applied.add(refKey(ref));
    const before = this.context.remote.get(ref);
    try {
      const after = await this.send(object);
      if (!before) this.context.result.addNew(ref);
      else {
        const diff = diffObjects(before, after);
        if (diff) this.context.result.addChanged(ref, diff);
      }
      return true;
    } catch (error) {
      this.context.result.error(describeApplyError(error), ref);
      return false;
    }
  }

  private async send(object: KubeObject): Promise<KubeObject> {
    const { cluster, fieldManager, dryRun } = this.context;
    if (dryRun && this.isPlannedKind(object)) return object;
    const namespace = object.metadata.namespace;
    if (dryRun && namespace && this.plannedNamespaces.has(namespace) && !(await this.namespaceExists(namespace))) {
      // The server refuses objects in a namespace that does not exist yet; the default namespace stands in for it.
      const answer = await cluster.apply({ ...object, metadata: { ...object.metadata, namespace: 'default' } }, { fieldManager, dryRun });
      return { ...answer, metadata: { ...answer.metadata, namespace } };
    }
    return cluster.apply(object, { fieldManager, dryRun });
  }

  private isPlannedKind(object: KubeObject): boolean {
    return this.plannedKinds.has(`${splitApiVersion(object.apiVersion).group}/${object.kind}`) && !this.context.remote.get(refOf(object));
  }

  private async namespaceExists(name: string): Promise<boolean> {
    return (await this.context.cluster.get({ group: '', version: 'v1', kind: 'Namespace', namespace: '', name })) !== undefined;
  }

  private async waitFor(refs: readonly ObjectRef[], what: string): Promise<void> {
    const { progress, result } = this.context;
    progress.step('wait', `waiting for ${refs.length} object(s): ${what}`);
    const notReady = await waitForReadiness(this.context.cluster, refs, {
      timeoutMs: Math.max(0, this.context.deadline - Date.now()),
      onPoll: (remaining) => remaining > 0 && progress.step('wait', `${remaining} object(s) not ready yet`),
    });
    for (const entry of notReady) {
      result.error(entry.failed ? `failed: ${entry.reason}` : `not ready before the timeout: ${entry.reason}`, entry.ref);
    }
    if (notReady.length === 0) progress.step('wait', `${refs.length} object(s) ready`);
  }
}

function describeApplyError(error: unknown): string {
  if (error instanceof UnknownKindError) return error.message;
  if (error instanceof KubeApiError) return `rejected by the API server (${error.reason || error.status}): ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
