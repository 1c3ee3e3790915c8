/**
 * Reconciling one KluctlDeployment, with Kluctl's controller semantics (kluctl's
 * pkg/controllers/kluctldeployment_controller*.go), in the shape of Flux's reconcilers: fetch the object, make sure
 * the finalizer is there, handle deletion, then run the work and patch the status once at the end.
 *
 * - Deletion: with `delete: true` and not suspended, every object carrying the discriminator recorded in
 *   status.targetKey is deleted (no render needed, so a broken source cannot block it), as a dry run when the
 *   spec says `dryRun`; the finalizer goes anyway.
 * - Manual requests (`kluctl.io/request-<kind>` annotations, see requests.ts): one per pass, then requeue at once.
 * - Full reconcile (every pass unless suspended, or on a reconcile request): fetch the source, render, compute the
 *   objects hash; deploy (with prune when `prune`) when never deployed, the hash changed, the approval changed, the
 *   spec changed or `deployInterval` elapsed — with `manual`, only a hash equal to `manualObjectsHash`; validate
 *   after a deploy and every validateInterval; detect drift (a server-side dry-run diff) on every pass.
 * - Requeue at the earliest due time (interval, deployInterval, validateInterval), `retryInterval` after a failure.
 * - Cancellation: every request and child process of the reconcile is bound to the manager's signal, which fires
 *   when the controller stops or loses its Lease, so a replica that is no longer leader stops writing at once —
 *   status included — instead of finishing its deploy beside the new leader.
 */
import { isDeepStrictEqual } from 'node:util';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  FINALIZER,
  GROUP,
  KIND,
  VERSION,
  REASONS,
  type KluctlDeployment,
  type KluctlDeploymentSpec,
  type KluctlDeploymentStatus,
  type ManualRequestResult,
  type CommandInfo,
  type ResultSummary,
} from '../../api/kluctl-deployment.ts';
import type { Cluster } from '../../kube/cluster.ts';
import { parseSafeDuration } from '../../duration.ts';
import { deployTarget, type CommandContext } from '../../deploy/deploy.ts';
import type { AppliedObjects } from '../../deploy/applied-objects.ts';
import { pokeImages } from '../../deploy/poke-images.ts';
import { prepareTarget, type PreparedTarget } from '../../target/prepare.ts';
import type { TargetRequest } from '../../target/request.ts';
import type { RenderCache } from '../../target/render-cache.ts';
import { deleteByDiscriminator, pruneTarget } from '../../deploy/prune.ts';
import type { Engine } from '../../engine.ts';
import type { CommandResult } from '../../deploy/result.ts';
import { writeCommandResult } from '../../deploy/result-store.ts';
import { validateTarget } from '../../deploy/validate.ts';
import { problemsOf } from '../../problems.ts';
import type { Progress } from '../../progress.ts';
import { isPlainObject } from '../../values.ts';
import type { AlertEvent } from '../../gitops/alerts.ts';
import type { ControllerMetrics } from '../../reconcile/metrics.ts';
import type { Logger } from '../../logger.ts';
import { decryptionKeys } from './decryption.ts';
import type { EventRecorder } from './events.ts';
import { deploymentKubeConfig } from './kubeconfig.ts';
import { overriddenSpec, pendingRequests, specProblems, type PendingRequest } from './requests.ts';
import { gitUrlOf, registryCredentialsOf, resolveSource, sourceLabel, type ResolvedSource } from './source.ts';
import { driftMessage, driftOf, resultMessage, summarize } from './status.ts';
import { withCondition } from '../../kube/conditions.ts';
import { StatusWriter } from './status-writer.ts';
import { nextReconcileIn, retryIntervalMs, timeoutMs } from './timing.ts';

export interface ReconcilerDeps {
  /** Renderer, git cache, programs, one Cluster per deployment context, and the field manager. */
  engine: Engine;
  /** The controller's own cluster (KluctlDeployments, Secrets, Events, results). */
  cluster: Cluster;
  /** The controller's own kubeconfig, from which each deployment's `default` context is built. */
  kubeConfig: KubeConfig;
  /** Where Flux artifacts are unpacked. */
  artifactsDir: string;
  resultsNamespace: string;
  keepResults: number;
  events: EventRecorder;
  /** Failures and changes, for alerts; must not throw. */
  notify: (event: AlertEvent) => void;
  /** What every reconcile applied, so later deploys and drift detection skip objects unchanged since. */
  applied: AppliedObjects;
  /** Earlier renders, reused while a deployment's revision, spec and the cluster reads of its render are unchanged. */
  renders: RenderCache;
}

/** What the manager hands to one reconcile. */
export interface ReconcileScope {
  log: Logger;
  metrics: ControllerMetrics;
  /** Fires when the controller stops or loses leadership: no new command starts after it. */
  signal: AbortSignal;
}

export interface ReconcileOutcome {
  /** When to reconcile again; undefined = only on the next change. */
  requeueAfterMs?: number;
  /** Set when the reconcile failed (the status says why); the manager logs and counts it. */
  error?: Error;
}

/**
 * Reconciles the KluctlDeployment `namespace/name`. Never throws for problems of the deployment itself.
 * @throws the signal's reason when it fired: the reconcile stopped, nothing was written after it.
 */
export async function reconcileKluctlDeployment(
  key: { namespace: string; name: string },
  deps: ReconcilerDeps,
  scope: ReconcileScope,
): Promise<ReconcileOutcome> {
  const own = deps.cluster.withSignal(scope.signal);
  const ref = { group: 'gitops.gantry.dev', version: 'v1beta1', kind: KIND, ...key };
  let deployment = (await own.get(ref)) as KluctlDeployment | undefined;
  if (!deployment) return {};
  if (deployment.metadata.deletionTimestamp) return finalize(deployment, { ...deps, cluster: own }, scope);
  if (!(deployment.metadata.finalizers ?? []).includes(FINALIZER)) {
    // Kluctl's controller goes on with the patched object rather than requeueing: the patch answers with it.
    deployment = (await own.patchMerge(
      ref,
      {
        metadata: {
          resourceVersion: deployment.metadata.resourceVersion,
          finalizers: [...(deployment.metadata.finalizers ?? []), FINALIZER],
        },
      },
      { fieldManager: deps.engine.config.fieldManager },
    )) as unknown as KluctlDeployment;
  }
  return new Reconciliation(deployment, { ...deps, cluster: own }, scope).run();
}

/**
 * Deletes the target's objects when asked to (`delete: true`, not suspended), then removes the finalizer. A failed
 * removal is retried with the queue's backoff, so the KluctlDeployment does not stay Terminating until some
 * unrelated event.
 */
async function finalize(deployment: KluctlDeployment, deps: ReconcilerDeps, scope: ReconcileScope): Promise<ReconcileOutcome> {
  const { spec, status, metadata } = deployment;
  const discriminator = status?.targetKey?.discriminator;
  if (spec.delete && !spec.suspend && discriminator) {
    scope.log.info({ discriminator }, 'deleting the objects of the discriminator');
    try {
      const kubeConfig = await deploymentKubeConfig(deployment, deps.kubeConfig, deps.cluster);
      // No waiting: the objects may include this KluctlDeployment's own namespace (kluctl-examples/gitops-deployment
      // deploys itself), which cannot disappear before this finalizer is removed.
      // A dry-run KluctlDeployment deletes as a dry run too, as Kluctl's controller does: it never deployed the
      // objects its discriminator finds, which may well be another deployment's.
      const result = await deleteByDiscriminator(deps.engine.clusters.get(kubeConfig), discriminator, {
        dryRun: spec.dryRun ?? false,
        timeoutMs: timeoutMs(spec),
        wait: false,
        ...commandContext(deps, scope),
      });
      const errors = result.errors.length > 0 ? `, ${result.errors.length} error(s)` : '';
      const type = result.errors.length > 0 ? 'Warning' : 'Normal';
      const verb = spec.dryRun ? 'would have deleted (dry run)' : 'deleted';
      await deps.events.record(deployment, type, 'Deleted', `${verb} ${result.deletedObjects.length} object(s)${errors}`);
    } catch (error) {
      scope.signal.throwIfAborted();
      await deps.events.record(deployment, 'Warning', 'DeleteFailed', problemsOf(error).join('; '));
    }
  }
  const finalizers = (metadata.finalizers ?? []).filter((entry) => entry !== FINALIZER);
  try {
    await deps.cluster.patchMerge(
      { group: 'gitops.gantry.dev', version: 'v1beta1', kind: KIND, namespace: metadata.namespace, name: metadata.name },
      { metadata: { resourceVersion: metadata.resourceVersion, finalizers } },
      { fieldManager: deps.engine.config.fieldManager },
    );
  } catch (error) {
    scope.signal.throwIfAborted();
    return { error: new Error(`removing the finalizer failed: ${problemsOf(error).join('; ')}`) };
  }
  return {};
}

/** What every engine command of a reconcile runs with. */
function commandContext(deps: ReconcilerDeps, scope: ReconcileScope): CommandContext {
  return { fieldManager: deps.engine.config.fieldManager, progress: progressTo(scope.log), signal: scope.signal };
}

/** A target rendered for one reconcile. */
interface Prepared {
  target: PreparedTarget;
  source: ResolvedSource;
  hash: string;
}

type Command = 'deploy' | 'poke-images' | 'diff' | 'prune' | 'validate';

/** How soon a deployment held back by its dependsOn looks again (Flux's kustomize-controller waits 30 s). */
const DEPENDENCY_RETRY_MS = 5_000;

/** How long a reconcile runs before its progress (the Reconciling message) is written, and how often after. */
const PROGRESS_DELAY_MS = 1_000;

class Reconciliation {
  private readonly deployment: KluctlDeployment;
  private readonly deps: ReconcilerDeps;
  private readonly log: Logger;
  private readonly metrics: ControllerMetrics;
  private readonly signal: AbortSignal;
  private readonly status: KluctlDeploymentStatus;
  private readonly started = Date.now();
  private deadline = 0;
  private failed = false;
  /** The first failure's message. */
  private failure: string | undefined;
  /** The dependencies (dependsOn) not Ready yet, which hold this reconcile back. */
  private heldBy: string[] = [];

  private readonly reconcileId: string;
  private readonly statusWriter: StatusWriter;

  constructor(deployment: KluctlDeployment, deps: ReconcilerDeps, scope: ReconcileScope) {
    this.deployment = deployment;
    this.deps = deps;
    this.log = scope.log;
    this.metrics = scope.metrics;
    this.signal = scope.signal;
    this.reconcileId = (scope.log.bindings()['reconcileID'] as string | undefined) ?? randomUUID();
    this.status = structuredClone(deployment.status ?? {});
    this.statusWriter = new StatusWriter(() => this.patchStatus(), { delayMs: PROGRESS_DELAY_MS, startedAt: this.started });
  }

  async run(): Promise<ReconcileOutcome> {
    const { spec } = this.deployment;
    const invalid = specProblems(spec);
    if (invalid.length > 0) {
      this.fail(REASONS.prepareFailed, `invalid spec: ${invalid.join('; ')}`);
      return this.finish(false);
    }
    this.deadline = this.started + timeoutMs(spec);
    let requeueNow = false;
    try {
      const requests = pendingRequests(this.deployment);
      const request = requests[0];
      // Whoever asks for a command has usually just pushed: fetch now, whatever the git refresh interval says.
      const url = request && gitUrlOf(this.deployment);
      if (url) this.deps.engine.git.expire(url);
      if (request && request.kind !== 'reconcile') {
        await this.serveRequest(request);
        requeueNow = true;
      } else if (!spec.suspend || request) {
        this.heldBy = await this.dependenciesNotReady(spec);
        if (this.heldBy.length === 0) await this.reconcileFully(request);
      } else {
        this.status.observedGeneration = this.generation();
      }
    } catch (error) {
      // Cancelled (stopping, or no longer leader): nothing more is written, not even the status.
      if (this.signal.aborted) this.statusWriter.cancel();
      this.signal.throwIfAborted();
      this.fail(REASONS.prepareFailed, problemsOf(error).join('; '));
    }
    return this.finish(requeueNow);
  }

  private async finish(requeueNow: boolean): Promise<ReconcileOutcome> {
    if (!requeueNow) this.status.conditions = withCondition(this.status.conditions, this.readyCondition());
    this.status.conditions = withCondition(this.status.conditions, {
      type: 'Reconciling',
      status: 'False',
      reason: REASONS.succeeded,
      message: 'done',
      observedGeneration: this.generation(),
    });
    const written = await this.statusWriter.now();
    if (!written) return { requeueAfterMs: retryIntervalMs(this.deployment.spec), error: new Error('the status could not be written') };
    if (requeueNow) return { requeueAfterMs: 0 };
    if (this.heldBy.length > 0) return { requeueAfterMs: DEPENDENCY_RETRY_MS };
    if (this.failed) return { requeueAfterMs: retryIntervalMs(this.deployment.spec), error: new Error(this.failure ?? 'reconcile failed') };
    return { requeueAfterMs: nextReconcileIn({ ...this.deployment, status: this.status }, Date.now()) };
  }

  /** One manual request: diff, deploy, prune or validate, with the request's spec overrides. */
  private async serveRequest(request: PendingRequest): Promise<void> {
    const requestResult: ManualRequestResult = {
      request: request.request,
      startTime: new Date().toISOString(),
      reconcileId: this.reconcileId,
    };
    await this.acknowledge(request, requestResult);
    try {
      const spec = overriddenSpec(this.deployment.spec, request.request);
      const command: Command =
        request.kind === 'deploy' ? (spec.deployMode === 'poke-images' ? 'poke-images' : 'deploy') : (request.kind as Command);
      await this.withPrepared(spec, async (prepared) => {
        const { id, summary, result } = await this.runCommand(command, spec, prepared);
        requestResult.resultId = id;
        if (result.errors.length > 0) requestResult.commandError = result.errors.map((error) => error.message).join('; ');
        if (command === 'diff') this.status.lastDiffResult = summary;
        else if (command === 'validate') this.status.lastValidateResult = summary;
        else this.status.lastDeployResult = summary;
      });
    } catch (error) {
      requestResult.commandError = problemsOf(error).join('; ');
    }
    this.finishRequest(request, requestResult);
  }

  /** The periodic (or requested) full reconcile. */
  private async reconcileFully(request: PendingRequest | undefined): Promise<void> {
    const requestResult: ManualRequestResult | undefined = request && {
      request: request.request,
      startTime: new Date().toISOString(),
      reconcileId: this.reconcileId,
    };
    if (request && requestResult) await this.acknowledge(request, requestResult);
    try {
      const spec = request ? overriddenSpec(this.deployment.spec, request.request) : this.deployment.spec;
      await this.withPrepared(spec, async (prepared) => {
        if (this.needsDeploy(prepared.hash, spec)) {
          const { id } = await this.runCommand(spec.deployMode === 'poke-images' ? 'poke-images' : 'deploy', spec, prepared);
          if (requestResult) requestResult.resultId = id;
          if (spec.validate !== false) await this.runCommand('validate', spec, prepared);
        } else if (spec.validate !== false && this.validationDue()) {
          await this.runCommand('validate', spec, prepared);
        }
        if (spec.validate === false) delete this.status.lastValidateResult;
        this.status.lastObjectsHash = prepared.hash;
        if (spec.manualObjectsHash !== undefined) this.status.lastManualObjectsHash = spec.manualObjectsHash;
        else delete this.status.lastManualObjectsHash;
        await this.detectDrift(spec, prepared);
      });
      this.status.observedGeneration = this.generation();
    } catch (error) {
      if (requestResult) requestResult.commandError = problemsOf(error).join('; ');
      throw error;
    } finally {
      if (request && requestResult) this.finishRequest(request, requestResult);
    }
  }

  /**
   * The KluctlDeployments of `spec.dependsOn` that are not Ready at their current generation (Flux's rule for
   * dependencies), each as `namespace/name (why)`.
   */
  private async dependenciesNotReady(spec: KluctlDeploymentSpec): Promise<string[]> {
    const held: string[] = [];
    for (const dependency of spec.dependsOn ?? []) {
      const namespace = dependency.namespace ?? this.deployment.metadata.namespace;
      const found = (await this.deps.cluster.get({ group: GROUP, version: VERSION, kind: KIND, namespace, name: dependency.name })) as
        KluctlDeployment | undefined;
      const ready = found?.status?.conditions?.find((condition) => condition.type === 'Ready');
      const current = found !== undefined && found.status?.observedGeneration === found.metadata.generation;
      if (ready?.status === 'True' && current) continue;
      held.push(`${namespace}/${dependency.name} (${found ? (ready?.message ?? 'no Ready condition yet') : 'not found'})`);
    }
    return held;
  }

  /** Kluctl's needDeploy, with the manual approval gate. */
  private needsDeploy(hash: string, spec: KluctlDeploymentSpec): boolean {
    const status = this.deployment.status ?? {};
    const lastDeploy = status.lastDeployResult;
    // A deploy that failed is tried again (after the retry backoff), even when the rendered objects are the same.
    let due = lastDeploy === undefined || lastDeploy.errors.length > 0 || status.lastObjectsHash !== hash;
    if (!due && spec.manual && status.lastManualObjectsHash !== spec.manualObjectsHash) due = true;
    if (!due && status.observedGeneration !== this.generation()) due = true;
    if (!due) due = this.deployIntervalElapsed(spec);
    if (due && spec.manual && spec.manualObjectsHash !== hash) {
      this.log.info({ objectsHash: hash }, 'waiting for approval (spec.manualObjectsHash)');
      return false;
    }
    return due;
  }

  private deployIntervalElapsed(spec: KluctlDeploymentSpec): boolean {
    if (!spec.deployInterval || spec.deployInterval === 'never') return false;
    const end = this.status.lastDeployResult?.commandInfo.endTime;
    return end !== undefined && Date.now() >= Date.parse(end) + parseSafeDuration(spec.deployInterval);
  }

  private validationDue(): boolean {
    const last = this.status.lastValidateResult;
    if (!last) return true;
    const interval = this.deployment.spec.validateInterval ?? this.deployment.spec.interval;
    return interval !== 'never' && Date.now() >= Date.parse(last.commandInfo.endTime) + parseSafeDuration(interval);
  }

  private async detectDrift(spec: KluctlDeploymentSpec, prepared: Prepared): Promise<void> {
    this.progress('Performing drift detection');
    const started = new Date().toISOString();
    const result = await deployTarget(prepared.target.rendered, this.targetCluster(prepared), {
      dryRun: true,
      prune: false,
      wait: false,
      orphans: false,
      timeoutMs: this.timeLeft(),
      behaviour: behaviourOf(spec, this.timeLeft()),
      applied: this.deps.applied,
      ...this.commandContext(),
    });
    const commandInfo = this.commandInfo('diff', started, prepared, true);
    const drift = driftOf(result, { id: '', commandInfo });
    this.status.lastDriftDetectionResult = drift;
    this.status.lastDriftDetectionResultMessage = driftMessage(drift);
    this.metrics.recordDrift(this.deployment.metadata.namespace, this.deployment.metadata.name, drift.objects.length);
  }

  /** Runs a command against the prepared target, keeps its result, updates status, and tells events and alerts. */
  private async runCommand(
    command: Command,
    spec: KluctlDeploymentSpec,
    prepared: Prepared,
  ): Promise<{ id: string; summary: ResultSummary; result: CommandResult }> {
    this.progress(`Performing ${command}`);
    const started = new Date().toISOString();
    const result = await this.execute(command, spec, prepared);
    const commandInfo = this.commandInfo(
      command,
      started,
      prepared,
      command === 'diff' || (command !== 'validate' && spec.dryRun === true),
    );
    const projectKey = `${prepared.source.projectKey.repoKey}#${prepared.source.projectKey.subDir}`;
    const id = await writeCommandResult(
      this.deps.cluster,
      { projectKey, commandInfo, result },
      { namespace: this.deps.resultsNamespace, keep: this.deps.keepResults, fieldManager: this.deps.engine.config.fieldManager },
    ).catch((error: unknown) => {
      this.signal.throwIfAborted();
      this.log.warn({ err: error, command }, 'the command result could not be kept');
      return '';
    });
    const summary = summarize(result, { id, commandInfo, objectsHash: prepared.hash, revision: prepared.source.revision });
    if (command === 'deploy' || command === 'poke-images') {
      this.status.lastDeployResult = summary;
      if (!spec.dryRun)
        this.metrics.recordDeploy(this.deployment.metadata.namespace, this.deployment.metadata.name, result.errors.length === 0);
    } else if (command === 'validate') this.status.lastValidateResult = summary;
    await this.announce(command, summary, prepared.source.revision);
    return { id, summary, result };
  }

  private async execute(command: Command, spec: KluctlDeploymentSpec, prepared: Prepared): Promise<CommandResult> {
    const { rendered } = prepared.target;
    const cluster = this.targetCluster(prepared);
    const timeout = this.timeLeft();
    const context = this.commandContext();
    const dryRun = spec.dryRun ?? false;
    switch (command) {
      case 'deploy':
        return deployTarget(rendered, cluster, {
          dryRun,
          prune: spec.prune ?? false,
          wait: !spec.noWait,
          timeoutMs: timeout,
          behaviour: behaviourOf(spec, timeout),
          applied: this.deps.applied,
          ...context,
        });
      case 'poke-images':
        return pokeImages(rendered, cluster, { dryRun, ...context });
      case 'diff':
        return deployTarget(rendered, cluster, {
          dryRun: true,
          prune: false,
          wait: false,
          timeoutMs: timeout,
          behaviour: behaviourOf(spec, timeout),
          applied: this.deps.applied,
          ...context,
        });
      case 'prune':
        return pruneTarget(rendered, cluster, { dryRun, timeoutMs: timeout, ...context });
      case 'validate':
        return validateTarget(rendered, cluster, { waitMs: 0, ...context });
    }
  }

  /**
   * What every command is run with. The target's lock is not waited for: a CLI or an agent changing the same target
   * makes this reconcile fail with who holds it, and the next one (after retryInterval) tries again.
   */
  private commandContext(): CommandContext {
    const { namespace, name } = this.deployment.metadata;
    return {
      fieldManager: this.deps.engine.config.fieldManager,
      progress: progressTo(this.log),
      signal: this.signal,
      lock: { holder: `the controller's KluctlDeployment ${namespace}/${name} (${hostname()})`, waitMs: 0 },
    };
  }

  /** The deployment's cluster: rendered against, so never undefined here. */
  private targetCluster(prepared: Prepared): Cluster {
    if (!prepared.target.cluster) throw new Error('the target was rendered without a cluster');
    return prepared.target.cluster;
  }

  /** Events for every deploy, prune and failure; alerts on failure and on change. */
  private async announce(command: Command, summary: ResultSummary, revision: string): Promise<void> {
    const message = resultMessage(command, summary);
    const changed = summary.newObjects + summary.changedObjects + summary.deletedObjects > 0;
    if (summary.errors.length > 0) {
      const reason =
        command === 'validate'
          ? REASONS.validateFailed
          : command === 'prune'
            ? REASONS.pruneFailed
            : command === 'diff'
              ? REASONS.diffFailed
              : REASONS.deployFailed;
      if (command !== 'diff') this.markFailed(message);
      await this.deps.events.record(this.deployment, 'Warning', reason, message);
      this.deps.notify(this.alert('error', reason, message, revision, summary));
    } else if (changed && command !== 'diff' && command !== 'validate') {
      const reason =
        command === 'prune' || (summary.deletedObjects > 0 && summary.newObjects + summary.changedObjects === 0) ? 'Pruned' : 'Deployed';
      await this.deps.events.record(this.deployment, 'Normal', reason, message);
      this.deps.notify(this.alert('info', reason, message, revision, summary));
    }
  }

  /** Fetches the source and renders the target with `spec`, runs `work`, and cleans up. */
  private async withPrepared(spec: KluctlDeploymentSpec, work: (prepared: Prepared) => Promise<void>): Promise<void> {
    this.progress('Fetching the source');
    const registries = await registryCredentialsOf({ ...this.deployment, spec }, this.deps.cluster);
    const { git, oci } = this.deps.engine;
    const source = await resolveSource(
      { ...this.deployment, spec },
      { cluster: this.deps.cluster, git, oci, registries, artifactsDir: this.deps.artifactsDir, signal: this.signal },
    );
    // A request whose overrides move the source (a diff of an unmerged branch) ran elsewhere than the resource points.
    if (isDeepStrictEqual(spec.source, this.deployment.spec.source)) {
      this.status.observedCommit = source.revision;
      this.status.projectKey = source.projectKey;
    }
    const keys = await decryptionKeys({ ...this.deployment, spec }, this.deps.cluster, this.deps.engine.tools);
    try {
      this.progress('Rendering');
      const kubeConfig = await deploymentKubeConfig({ ...this.deployment, spec }, this.deps.kubeConfig, this.deps.cluster);
      const target = await prepareTarget(targetRequest(spec, source), this.deps.engine, {
        kubeConfig,
        sopsEnv: keys.env,
        registries,
        progress: progressTo(this.log),
        signal: this.signal,
        renderCache: this.deps.renders,
      });
      this.status.targetKey = { targetName: target.target.name, discriminator: target.target.discriminator };
      this.status.lastPrepareError = '';
      await work({ target, source, hash: target.rendered.objectsHash });
    } catch (error) {
      this.signal.throwIfAborted();
      // Messages name files by their place in the cache; the source and revision tell an operator more.
      const message = problemsOf(error).join('; ').replaceAll(source.projectDir, sourceLabel(source));
      if (!this.status.lastPrepareError) this.status.lastPrepareError = message;
      throw new Error(message);
    } finally {
      await keys.cleanup();
    }
  }

  /** Ready, from the last deploy and validation (Kluctl's buildFinalStatus). */
  private readyCondition() {
    const generation = this.generation();
    if (this.heldBy.length > 0) {
      const message = `dependencies not ready: ${this.heldBy.join(', ')}`;
      return { type: 'Ready', status: 'False' as const, reason: REASONS.dependencyNotReady, message, observedGeneration: generation };
    }
    if (this.status.lastPrepareError) {
      return {
        type: 'Ready',
        status: 'False' as const,
        reason: REASONS.prepareFailed,
        message: this.status.lastPrepareError,
        observedGeneration: generation,
      };
    }
    const deploy = this.status.lastDeployResult;
    const validate = this.status.lastValidateResult;
    if (!deploy) {
      const message = this.deployment.spec.manual
        ? `waiting for approval: set spec.manualObjectsHash to ${this.status.lastObjectsHash ?? 'the objects hash'}`
        : 'deployment status unknown';
      return { type: 'Ready', status: 'False' as const, reason: REASONS.deployFailed, message, observedGeneration: generation };
    }
    let message = resultMessage('deploy', deploy);
    if (this.deployment.spec.validate !== false) {
      if (!validate)
        return {
          type: 'Ready',
          status: 'False' as const,
          reason: REASONS.validateFailed,
          message: `${message}. Validation status unknown.`,
          observedGeneration: generation,
        };
      message += validate.errors.length > 0 ? `. validate: ${validate.errors.length} error(s): ${validate.errors[0]}` : '. validate: ok';
    }
    if (deploy.errors.length > 0)
      return { type: 'Ready', status: 'False' as const, reason: REASONS.deployFailed, message, observedGeneration: generation };
    if (validate && validate.errors.length > 0)
      return { type: 'Ready', status: 'False' as const, reason: REASONS.validateFailed, message, observedGeneration: generation };
    return { type: 'Ready', status: 'True' as const, reason: REASONS.succeeded, message, observedGeneration: generation };
  }

  private fail(reason: string, message: string): void {
    this.markFailed(message);
    this.status.lastPrepareError = message;
    void this.deps.events.record(this.deployment, 'Warning', reason, message);
    this.deps.notify(this.alert('error', reason, message));
  }

  private markFailed(message: string): void {
    this.failed = true;
    this.failure ??= message;
  }

  private alert(severity: AlertEvent['severity'], reason: string, message: string, revision?: string, summary?: ResultSummary): AlertEvent {
    const { namespace, name, labels } = this.deployment.metadata;
    const counts = summary && {
      newObjects: summary.newObjects,
      changedObjects: summary.changedObjects,
      deletedObjects: summary.deletedObjects,
      orphanObjects: summary.orphanObjects,
      warnings: summary.warnings.length,
      errors: summary.errors.length,
    };
    return { deployment: { namespace, name, labels }, severity, reason, message, revision, summary: counts };
  }

  private commandInfo(command: string, startTime: string, prepared: Prepared, dryRun: boolean): CommandInfo {
    return {
      command,
      startTime,
      endTime: new Date().toISOString(),
      target: prepared.target.target.name,
      discriminator: prepared.target.target.discriminator,
      ...(dryRun ? { dryRun } : {}),
    };
  }

  /**
   * Ends a request's result. The log line comes before the status that holds the end time, so a CLI following this
   * reconcile's log (`gantry gitops deploy`) knows by its fields `requestFinished` and `requestValue` that it has
   * every line of the request.
   */
  private finishRequest(request: PendingRequest, result: ManualRequestResult): void {
    result.endTime = new Date().toISOString();
    this.setRequestResult(request, result);
    this.log.info(
      { requestFinished: request.kind, requestValue: request.request.requestValue, resultId: result.resultId },
      result.commandError ? `the ${request.kind} request failed: ${result.commandError}` : `the ${request.kind} request finished`,
    );
  }

  private setRequestResult(request: PendingRequest, result: ManualRequestResult): void {
    (this.status as Record<string, unknown>)[`${request.kind}RequestResult`] = { ...result };
  }

  /** Logs a phase and shows it in the Reconciling condition (written soon, see StatusWriter). */
  private progress(message: string): void {
    if (this.signal.aborted) throw new Error('the controller is stopping');
    this.log.info(message);
    this.status.conditions = withCondition(this.status.conditions, {
      type: 'Reconciling',
      status: 'True',
      reason: REASONS.progressing,
      message,
      observedGeneration: this.generation(),
    });
    this.statusWriter.soon();
  }

  /**
   * Takes `request` off the object and records that it started. The two writes go to different parts of the object
   * (metadata, the status subresource), so they are sent together: a requested reconcile waits for one round trip.
   */
  private async acknowledge(request: PendingRequest, result: ManualRequestResult): Promise<void> {
    this.setRequestResult(request, result);
    await Promise.all([this.removeAnnotation(request.annotation), this.statusWriter.now()]);
  }

  private async removeAnnotation(annotation: string): Promise<void> {
    await this.deps.cluster.patchMerge(
      this.ref(),
      { metadata: { annotations: { [annotation]: null } } },
      { fieldManager: this.deps.engine.config.fieldManager },
    );
  }

  /**
   * Writes the whole status (false when that failed, logged): the controller owns it, and a merge patch would keep fields this reconcile removed (a
   * new request's result would inherit the previous one's endTime and resultId).
   */
  private async patchStatus(): Promise<boolean> {
    return this.deps.cluster
      .patchJson(this.ref(), [{ op: 'add', path: '/status', value: this.status }], {
        fieldManager: this.deps.engine.config.fieldManager,
        subresource: 'status',
      })
      .then(
        () => true,
        (error: unknown) => {
          this.log.warn({ err: error }, 'patching status failed');
          return false;
        },
      );
  }

  private timeLeft(): number {
    return Math.max(1000, this.deadline - Date.now());
  }

  private generation(): number {
    return this.deployment.metadata.generation ?? 0;
  }

  private ref() {
    return {
      group: 'gitops.gantry.dev',
      version: 'v1beta1',
      kind: KIND,
      namespace: this.deployment.metadata.namespace,
      name: this.deployment.metadata.name,
    };
  }
}

function targetRequest(spec: KluctlDeploymentSpec, source: ResolvedSource): TargetRequest {
  return {
    projectDir: source.projectDir,
    target: spec.target,
    targetNameOverride: spec.targetNameOverride,
    args: isPlainObject(spec.args) ? spec.args : {},
    context: spec.context,
    fixedImages: spec.images ?? [],
    inclusion: {
      includeTags: spec.includeTags ?? [],
      excludeTags: spec.excludeTags ?? [],
      includeDirs: spec.includeDeploymentDirs ?? [],
      excludeDirs: spec.excludeDeploymentDirs ?? [],
    },
  };
}

function behaviourOf(spec: KluctlDeploymentSpec, timeout: number) {
  return {
    forceApply: spec.forceApply ?? false,
    replaceOnError: spec.replaceOnError ?? false,
    forceReplaceOnError: spec.forceReplaceOnError ?? false,
    abortOnError: spec.abortOnError ?? false,
    readinessTimeoutMs: timeout,
  };
}

function progressTo(log: Logger): Progress {
  return { step: (scope, message) => log.info({ scope }, message) };
}
