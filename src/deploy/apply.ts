/**
 * Applying a rendered project, in Kluctl's order with Gantry's readiness waits:
 * 1. every Namespace and CustomResourceDefinition of the whole project first (CRDs until Established), so no item
 *    waits for a namespace or kind that another item creates;
 * 2. items in parallel, 8 at a time; within an item, as Kluctl does: delete its `deleteObjects` and
 *    `kluctl.io/delete` objects, run its pre-deploy hooks, apply its objects in rendered order, wait for the objects
 *    it asks to wait for (`waitReadiness`, `kluctl.io/wait-readiness`, `waitReadinessObjects`), run post-deploy hooks;
 * 3. at each barrier, and at the end, wait until everything applied so far is ready (Kluctl's barrier only waits
 *    for the apply; waiting for readiness too is what a barrier is usually meant for).
 * Each object is compared with its state before the run: not there before → new; otherwise a non-empty diff →
 * changed. Failures are recorded per object and the run goes on (unless abortOnError), as Kluctl does.
 */
import pLimit from 'p-limit';
import type { Cluster } from '../kube/cluster.ts';
import { UnknownKindError } from '../kube/cluster.ts';
import { KubeApiError } from '../kube/client.ts';
import { waitForCrds } from './crds.ts';
import { formatRef, refKey, refOf, splitApiVersion, type KubeObject, type ObjectRef } from '../kube/object.ts';
import type { TargetItem } from '../target/rendered-target.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';
import type { Progress } from '../progress.ts';
import type { SensitiveValues } from '../project/sensitive.ts';
import { resolveConflicts, type ConflictCause, type ConflictRule } from './conflicts.ts';
import { untilGone } from './deletion.ts';
import { diffForResult, type DiffRules } from './diff.ts';
import { hookOf, hooksFor, tryHookOf, type Hook, type HookPhase } from './hooks.ts';
import { resolveSelectors } from './object-selectors.ts';
import type { AppliedObjects } from './applied-objects.ts';
import type { RemoteObjects } from './remote-objects.ts';
import type { ResultCollector } from './result.ts';
import { isWaitedFor, waitForReadiness } from './wait.ts';
import { messageOf } from '../problems.ts';

export interface ApplyBehaviour {
  /** Take every conflicting field (`--force-apply`). */
  forceApply: boolean;
  /** Retry a failed apply with a replace (PUT) (`--replace-on-error`). */
  replaceOnError: boolean;
  /** If the replace fails too, delete and re-create (`--force-replace-on-error`). */
  forceReplaceOnError: boolean;
  /** Stop starting new items after the first error (`--abort-on-error`). */
  abortOnError: boolean;
  /** Limit of each readiness wait, in milliseconds (`--readiness-timeout`). */
  readinessTimeoutMs: number;
}

export interface ApplyContext {
  cluster: Cluster;
  fieldManager: string;
  /** Server-side dry run: nothing is persisted and nothing is waited for. */
  dryRun: boolean;
  /** Wait for readiness (off with `--no-wait`). */
  wait: boolean;
  /** Epoch milliseconds by which everything must end. */
  deadline: number;
  options: ApplyBehaviour;
  remote: RemoteObjects;
  /** What earlier runs applied: objects unchanged since are not sent again (see applied-objects.ts). */
  applied?: AppliedObjects | undefined;
  result: ResultCollector;
  progress: Progress;
  /** The values of sensitive vars, masked in the diffs the run reports. */
  sensitive?: SensitiveValues | undefined;
  /**
   * Stops the run: no further object is applied or deleted, waits end, and the signal's reason is thrown (the
   * context's cluster is expected to be bound to it too, so a request under way is abandoned).
   */
  signal?: AbortSignal | undefined;
}

/** Applies `items` and records new, changed, deleted and failed objects and applied hooks in `context.result`. */
export async function applyItems(items: readonly TargetItem[], context: ApplyContext): Promise<void> {
  const run = new ApplyRun(context, items);
  await run.applyEarlyObjects();
  for (const group of splitAtBarriers(items)) {
    if (run.aborted()) break;
    await run.applyGroup(group);
  }
}

/**
 * Runs the `pre-delete` or `post-delete` hooks of every item, item by item in order (Gantry's addition: Kluctl
 * declares these hook names but runs them nowhere; Helm runs them around `helm uninstall`).
 */
export async function runDeleteHooks(
  items: readonly TargetItem[],
  phase: 'pre-delete' | 'post-delete',
  context: ApplyContext,
): Promise<void> {
  const run = new ApplyRun(context, items);
  for (const rendered of items) await run.runItemHooks(rendered, phase);
}

/** Groups of items that may run together: each barrier closes the group it belongs to. */
export function splitAtBarriers(items: readonly TargetItem[]): TargetItem[][] {
  const groups: TargetItem[][] = [[]];
  for (const item of items) {
    (groups[groups.length - 1] as TargetItem[]).push(item);
    if (item.barrier) groups.push([]);
  }
  return groups.filter((group) => group.length > 0);
}

function isCrd(object: KubeObject): boolean {
  return object.kind === 'CustomResourceDefinition' && splitApiVersion(object.apiVersion).group === 'apiextensions.k8s.io';
}

function isEarlyObject(object: KubeObject): boolean {
  return (object.kind === 'Namespace' && object.apiVersion === 'v1') || isCrd(object);
}

/** What became of one object: sent and accepted, not sent since nothing changed, or refused (recorded as an error). */
type ApplyOutcome = 'applied' | 'unchanged' | 'failed';

function appliedMessage(count: number, unchanged: number): string {
  return unchanged === 0
    ? `applied ${count} object(s)`
    : `applied ${count} object(s), ${unchanged} of them unchanged since their last apply (not sent)`;
}

/** An item's objects sorted by role. */
interface ItemPlan {
  hooks: Hook[];
  objects: KubeObject[];
  deletions: ObjectRef[];
  /** Objects of this item to wait for right after it is applied. */
  itemWaits: ObjectRef[];
  /** None of the item's objects existed before: initial hooks run. */
  initial: boolean;
}

class ApplyRun {
  private readonly context: ApplyContext;
  private readonly items: readonly TargetItem[];
  private readonly applied = new Set<string>();
  /** The API server's answer to each apply of this run (by refKey): what a wait starts from instead of reading it. */
  private readonly answers = new Map<string, KubeObject>();
  /** Namespaces this run creates; in a dry run they do not exist yet, which the server would reject. */
  private readonly plannedNamespaces = new Set<string>();
  /** Kinds declared by CRDs of this run, which a dry run cannot send to a server that does not know them yet. */
  private readonly plannedKinds = new Set<string>();
  private failed = false;
  private crdsChanged = false;

  constructor(context: ApplyContext, items: readonly TargetItem[]) {
    this.context = context;
    this.items = items;
    for (const object of items.flatMap((item) => item.objects)) {
      if (object.kind === 'Namespace') this.plannedNamespaces.add(object.metadata.name ?? '');
      const spec = object['spec'] as { group?: string; names?: { kind?: string } } | undefined;
      if (object.kind === 'CustomResourceDefinition' && spec?.group && spec.names?.kind)
        this.plannedKinds.add(`${spec.group}/${spec.names.kind}`);
    }
  }

  aborted(): boolean {
    return this.failed && this.context.options.abortOnError;
  }

  async applyEarlyObjects(): Promise<void> {
    const early = this.items.flatMap((rendered) =>
      rendered.objects
        .filter((object) => isEarlyObject(object) && !isTrueAnnotation(object, 'kluctl.io/delete') && !tryHookOf(object))
        .map((object) => ({ object, rendered })),
    );
    if (early.length === 0) return;
    this.context.progress.step('apply', `applying ${early.length} Namespace/CRD object(s) first`);
    const refs: ObjectRef[] = [];
    for (const { object, rendered } of early.sort(
      (a, b) => Number(b.object.kind === 'Namespace') - Number(a.object.kind === 'Namespace'),
    )) {
      if ((await this.applyObject(object, rendered, false)) !== 'failed') refs.push(refOf(object));
    }
    const crds = refs.filter((ref) => ref.kind === 'CustomResourceDefinition');
    // Only a new or changed CRD can change what the cluster serves (a version dropped too, which the wait does not
    // look for); the discovery cache is shared by every run.
    if (this.crdsChanged) this.context.cluster.discovery.invalidate();
    if (crds.length > 0 && !this.context.dryRun) await this.waitForCrds(crds);
  }

  /** Waits until the CRDs are Established and their kinds discovered, so the items can apply objects of them. */
  private async waitForCrds(refs: readonly ObjectRef[]): Promise<void> {
    const { progress, result } = this.context;
    progress.step('wait', `waiting for ${refs.length} CRD(s) to be established and served`);
    const unserved = await waitForCrds(
      this.context.cluster,
      refs.map((ref) => ref.name),
      { timeoutMs: Math.min(this.context.options.readinessTimeoutMs, this.timeLeft()), signal: this.context.signal },
    );
    for (const entry of unserved) {
      this.failed = true;
      const ref = refs.find((candidate) => candidate.name === entry.name);
      result.error(entry.failed ? `failed: ${entry.reason}` : `not served before the timeout: ${entry.reason}`, ref);
    }
    if (unserved.length === 0) progress.step('wait', `${refs.length} CRD(s) served`);
  }

  async applyGroup(group: readonly TargetItem[]): Promise<void> {
    const limit = pLimit(8);
    const applied = await Promise.all(group.map((item) => limit(() => (this.aborted() ? [] : this.applyItem(item)))));
    const barrier = group[group.length - 1];
    if (barrier?.barrier) this.context.progress.step('barrier', barrier.message ?? 'waiting for everything before the barrier');
    const toWait = applied.flat();
    if (this.shouldWait() && toWait.length > 0) await this.waitFor(toWait, 'readiness');
  }

  /** Runs one item; returns the refs still to wait for at the next barrier. */
  private async applyItem(rendered: TargetItem): Promise<ObjectRef[]> {
    this.context.signal?.throwIfAborted();
    const scope =
      rendered.dir ?? (rendered.deleteObjects.length > 0 ? '<delete>' : rendered.waitReadinessObjects.length > 0 ? '<wait>' : '<barrier>');
    const plan = await this.planItem(rendered, scope);
    if (!plan) return [];
    if (plan.deletions.length > 0) await this.deleteForItem(plan.deletions, scope);
    await this.runHooks(plan, 'pre-deploy', rendered, scope);
    if (this.aborted()) return [];
    if (plan.objects.length > 0) this.context.progress.step(scope, `applying ${plan.objects.length} object(s)`);
    const waitLater: ObjectRef[] = [];
    let unchanged = 0;
    for (const object of plan.objects) {
      this.context.signal?.throwIfAborted();
      if (this.aborted()) return [];
      const outcome = await this.applyObject(object, rendered, false);
      if (outcome === 'unchanged') unchanged++;
      if (outcome !== 'failed' && isWaitedFor(object)) waitLater.push(refOf(object));
    }
    if (plan.objects.length > 0) this.context.progress.step(scope, appliedMessage(plan.objects.length, unchanged));
    if (plan.itemWaits.length > 0 && this.shouldWait()) await this.waitFor(plan.itemWaits, `readiness of ${scope}`);
    await this.runHooks(plan, 'post-deploy', rendered, scope);
    return waitLater.filter((ref) => !plan.itemWaits.some((waited) => refKey(waited) === refKey(ref)));
  }

  private async planItem(rendered: TargetItem, scope: string): Promise<ItemPlan | undefined> {
    const item = rendered;
    const hooks: Hook[] = [];
    const objects: KubeObject[] = [];
    const deletions: ObjectRef[] = [];
    const itemWaits: ObjectRef[] = [];
    for (const object of rendered.objects) {
      let hook: Hook | undefined;
      try {
        hook = hookOf(object);
      } catch (error) {
        this.fail(error, refOf(object));
        continue;
      }
      if (isTrueAnnotation(object, 'kluctl.io/delete')) deletions.push(refOf(object));
      else if (hook) hooks.push(hook);
      else if (!this.applied.has(refKey(refOf(object)))) objects.push(object);
      if (!hook && (item.waitReadiness || isTrueAnnotation(object, 'kluctl.io/wait-readiness'))) itemWaits.push(refOf(object));
    }
    try {
      deletions.push(...(await resolveSelectors(this.context.cluster, item.deleteObjects)));
      itemWaits.push(...(await resolveSelectors(this.context.cluster, item.waitReadinessObjects)));
    } catch (error) {
      this.fail(new Error(`${scope}: ${(error as Error).message}`));
      return undefined;
    }
    const initial = rendered.objects.every((object) => !this.context.remote.get(refOf(object)));
    return { hooks, objects, deletions, itemWaits, initial };
  }

  private async deleteForItem(refs: readonly ObjectRef[], scope: string): Promise<void> {
    this.context.progress.step(scope, `deleting ${refs.length} object(s)`);
    const deleted: ObjectRef[] = [];
    for (const ref of refs) {
      try {
        if (await this.context.cluster.delete(ref)) {
          deleted.push(ref);
          this.context.result.addDeleted(ref);
        }
      } catch (error) {
        this.fail(error, ref);
      }
    }
    if (!this.context.dryRun) await untilGone(this.context.cluster, deleted, { timeoutMs: this.timeLeft(), signal: this.context.signal });
  }

  /** Runs one phase of an item's hooks outside a deploy (the delete hooks). */
  async runItemHooks(rendered: TargetItem, phase: HookPhase): Promise<void> {
    const hooks = rendered.objects.flatMap((object) => {
      const hook = tryHookOf(object);
      return hook ? [hook] : [];
    });
    await this.runHooks({ hooks, objects: [], deletions: [], itemWaits: [], initial: false }, phase, rendered, rendered.dir ?? '<item>');
  }

  /** Kluctl's RunHooks: delete (before-hook-creation), apply in weight order, wait, delete per policy. */
  private async runHooks(plan: ItemPlan, phase: HookPhase, rendered: TargetItem, scope: string): Promise<void> {
    const hooks = hooksFor(plan.hooks, phase, plan.initial);
    if (hooks.length === 0 || this.aborted()) return;
    this.context.progress.step(scope, `running ${hooks.length} ${phase} hook(s)`);
    await this.deleteHooks(hooks.filter((hook) => hook.deletePolicies.has('before-hook-creation')));
    const outcomes: Array<{ hook: Hook; ready: boolean }> = [];
    for (const hook of hooks) {
      const ref = refOf(hook.object);
      if ((await this.applyObject(hook.object, rendered, true)) === 'failed') continue;
      if (!hook.wait || !this.shouldWait()) continue;
      const notReady = await this.waitFor([ref], `hook ${formatRef(ref)}`);
      outcomes.push({ hook, ready: notReady === 0 });
    }
    const toDelete = outcomes.filter(
      ({ hook, ready }) => (ready && hook.deletePolicies.has('hook-succeeded')) || (!ready && hook.deletePolicies.has('hook-failed')),
    );
    await this.deleteHooks(toDelete.map(({ hook }) => hook));
  }

  private async deleteHooks(hooks: readonly Hook[]): Promise<void> {
    const refs = hooks.map((hook) => refOf(hook.object));
    const deleted: ObjectRef[] = [];
    for (const ref of refs) {
      try {
        if (await this.context.cluster.delete(ref)) deleted.push(ref);
      } catch (error) {
        this.fail(error, ref);
      }
    }
    if (!this.context.dryRun) await untilGone(this.context.cluster, deleted, { timeoutMs: this.timeLeft(), signal: this.context.signal });
  }

  /** Applies one object, unless it is unchanged since its last apply, and records the outcome. */
  private async applyObject(object: KubeObject, rendered: TargetItem, hook: boolean): Promise<ApplyOutcome> {
    const ref = refOf(object);
    this.applied.add(refKey(ref));
    const live = hook ? undefined : this.context.remote.get(ref);
    if (live && this.context.applied?.unchanged(object, live, this.context.fieldManager)) {
      if (!this.context.dryRun) this.answers.set(refKey(ref), live);
      return 'unchanged';
    }
    if (live && !this.context.dryRun) this.context.applied?.forget(live);
    try {
      const after = await this.send(object, rendered.conflictResolution);
      if (!this.context.dryRun) this.answers.set(refKey(ref), after);
      if (hook) this.context.result.addAppliedHook(ref);
      else this.recordChange(object, after, rendered);
      return 'applied';
    } catch (error) {
      this.fail(new Error(describeApplyError(error)), ref);
      return 'failed';
    }
  }

  private recordChange(object: KubeObject, after: KubeObject, rendered: TargetItem): void {
    const ref = refOf(object);
    const rules: DiffRules = { ignoreForDiff: rendered.ignoreForDiff, sensitive: this.context.sensitive };
    const before = this.context.remote.get(ref) ?? this.context.remote.byDiffName(object);
    const diff = before && diffForResult(before, after, rules);
    if (isCrd(object) && (!before || diff)) this.crdsChanged = true;
    if (!before) this.context.result.addNew(ref);
    else if (diff) this.context.result.addChanged(ref, diff);
  }

  /** Server-side apply, with Kluctl's fallbacks: conflict resolution, then replace, then delete and re-create. */
  private async send(object: KubeObject, rules: readonly ConflictRule[]): Promise<KubeObject> {
    const { cluster, dryRun, options } = this.context;
    if (dryRun && this.isPlannedKind(object)) return object;
    const apply = (candidate: KubeObject, force: boolean) => this.applyInPlace(candidate, force);
    try {
      const answer = await apply(object, options.forceApply);
      // Only a plain apply: one that needed conflict resolution or a replace warns again on the next run.
      if (!dryRun) this.context.applied?.record(object, answer, this.context.fieldManager);
      return answer;
    } catch (error) {
      if (error instanceof UnknownKindError) throw error;
      const remote = this.context.remote.get(refOf(object)) ?? (await cluster.get(refOf(object)));
      if (isConflict(error) && remote) {
        const resolution = resolveConflicts(object, remote, conflictCauses(error), rules);
        for (const lost of resolution.lostOwnership) {
          this.context.result.warn(`${lost.message}. Not updating field '${lost.field}' as we lost field ownership`, refOf(object));
        }
        return apply(resolution.object, true).catch((retryError: unknown) => this.replaceOrRecreate(object, remote, retryError));
      }
      return this.replaceOrRecreate(object, remote, error);
    }
  }

  private async applyInPlace(object: KubeObject, force: boolean): Promise<KubeObject> {
    const { cluster, fieldManager, dryRun } = this.context;
    const namespace = object.metadata.namespace;
    if (dryRun && namespace && this.plannedNamespaces.has(namespace) && !(await this.namespaceExists(namespace))) {
      // The server refuses objects in a namespace that does not exist yet; the default namespace stands in for it.
      const answer = await cluster.apply({ ...object, metadata: { ...object.metadata, namespace: 'default' } }, { fieldManager, force });
      return { ...answer, metadata: { ...answer.metadata, namespace } };
    }
    return cluster.apply(object, { fieldManager, force });
  }

  /** `--replace-on-error`: PUT over the live object; `--force-replace-on-error`: delete it and apply again. */
  private async replaceOrRecreate(object: KubeObject, remote: KubeObject | undefined, error: unknown): Promise<KubeObject> {
    const { cluster, fieldManager, dryRun, options, result } = this.context;
    const ref = refOf(object);
    if (!remote || !(options.replaceOnError || options.forceReplaceOnError)) throw error;
    result.warn(`applying failed (${describeApplyError(error)}), retrying with replace`, ref);
    try {
      return await cluster.replace(object, remote.metadata.resourceVersion ?? '', { fieldManager });
    } catch (replaceError) {
      if (!options.forceReplaceOnError) throw replaceError;
      if (isTrueAnnotation(object, 'kluctl.io/skip-delete') || isTrueAnnotation(remote, 'kluctl.io/skip-delete')) throw replaceError;
      result.warn('replacing failed too, deleting and re-creating the object', ref);
      if (dryRun) return object;
      await cluster.delete(ref);
      await untilGone(cluster, [ref], { timeoutMs: this.timeLeft(), signal: this.context.signal });
      return cluster.apply(object, { fieldManager });
    }
  }

  private isPlannedKind(object: KubeObject): boolean {
    return this.plannedKinds.has(`${splitApiVersion(object.apiVersion).group}/${object.kind}`) && !this.context.remote.get(refOf(object));
  }

  private async namespaceExists(name: string): Promise<boolean> {
    return (await this.context.cluster.get({ group: '', version: 'v1', kind: 'Namespace', namespace: '', name })) !== undefined;
  }

  private shouldWait(): boolean {
    return this.context.wait && !this.context.dryRun;
  }

  private timeLeft(): number {
    return Math.max(0, this.context.deadline - Date.now());
  }

  /** Waits for `refs`; records each that is not ready as an error and returns how many were not. */
  private async waitFor(refs: readonly ObjectRef[], what: string): Promise<number> {
    const { progress, result } = this.context;
    progress.step('wait', `waiting for ${refs.length} object(s): ${what}`);
    const notReady = await waitForReadiness(this.context.cluster, refs, {
      timeoutMs: Math.min(this.context.options.readinessTimeoutMs, this.timeLeft()),
      onPoll: (remaining) => remaining > 0 && progress.step('wait', `${remaining} object(s) not ready yet`),
      signal: this.context.signal,
      known: this.answers,
    });
    for (const entry of notReady) {
      this.failed = true;
      result.error(entry.failed ? `failed: ${entry.reason}` : `not ready before the timeout: ${entry.reason}`, entry.ref);
    }
    if (notReady.length === 0) progress.step('wait', `${refs.length} object(s) ready`);
    return notReady.length;
  }

  /** Records a failure and goes on, unless the run was cancelled: then the failure is the cancellation's, and it ends the run. */
  private fail(error: unknown, ref?: ObjectRef): void {
    this.context.signal?.throwIfAborted();
    this.failed = true;
    this.context.result.error(messageOf(error), ref);
  }
}

function isConflict(error: unknown): error is KubeApiError {
  return error instanceof KubeApiError && error.status === 409 && conflictCauses(error).length > 0;
}

function conflictCauses(error: KubeApiError): ConflictCause[] {
  const causes = (error.details as { causes?: Array<{ reason?: string; field?: string; message?: string }> } | undefined)?.causes ?? [];
  return causes
    .filter((cause) => cause.reason === 'FieldManagerConflict' && cause.field)
    .map((cause) => ({ field: cause.field as string, message: cause.message ?? 'conflict' }));
}

function describeApplyError(error: unknown): string {
  if (error instanceof UnknownKindError) return error.message;
  if (error instanceof KubeApiError) return `rejected by the API server (${error.reason || error.status}): ${error.message}`;
  return messageOf(error);
}
