/**
 * Release pipelines driven by events, never by a sweep: an agent's report that turns a stage's last service healthy
 * records the stage's promotion context at once, and a gate decision evaluates its edge at once; an edge whose gates
 * are all OPEN for its source stage's current context promotes it. Promotion, as Plural's pipelines do it: each
 * target service with criteria gets its source's commit as git ref (or chart version), and the listed configuration
 * keys copied from the source; the new revision reaches its agent through the usual push. A target that already
 * runs its source's commit with those keys' values gets no revision: a promotion of nothing new is recorded with no
 * services ("nothing to promote"), so the edge counts as promoted for that context. A WINDOW gate is evaluated
 * with the injected clock whenever its edge is, and a timer evaluates the edge again when the window next opens or
 * closes (timers are re-armed at start, so a restart loses none). A stage with a `rollout` gets a promotion's
 * revisions wave by wave (server/rollouts.ts); it records no context while that rollout is under way, and looks again
 * once it is done, so the next edge never promotes a stage half rolled out.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import { parseDuration } from '../duration.ts';
import { checkHealth } from '../pipeline/health-gate.ts';
import { windowState } from '../pipeline/window.ts';
import {
  type ContextService,
  currentContexts,
  decideGate,
  type Gate,
  type GateState,
  getPipeline,
  listGates,
  listPipelines,
  type Pipeline,
  type PromotedService,
  type PromotionContext,
  recordContext,
  recordPromotion,
  setEvaluatedGate,
  wasPromoted,
} from '../store/pipelines.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { getServiceById, type Service, type ServiceSecrets, serviceSecrets, type ServiceSpec, updateService } from '../store/services.ts';
import { HttpError } from '../http/errors.ts';
import type { Notifier } from './notifier.ts';
import type { AgentGate, GateReport } from '../api/agent.ts';
import type { PreviewReport } from '../api/previews.ts';
import { rejectionOf } from './rejections.ts';
import type { Previews } from './previews.ts';
import { type Preview, previewsOf } from '../store/previews.ts';
import type { ServiceSources } from './service-sources.ts';
import { messageOf } from '../problems.ts';
import { currentRollout } from '../store/rollouts.ts';
import type { RolloutRunner } from './rollouts.ts';

export interface PipelineDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** Previews of pending promotions: made when a context needs approval, read before offering it. */
  previews: Previews;
  /** A promoted service has a new revision: its agent should hear of it now. */
  onChange: (service: Service) => void;
  /** pipeline.update events: a gate waiting for approval, a promotion, a gate closed. */
  notifier: Notifier;
  log: Logger;
  /** The clock WINDOW gates are evaluated with; default the system's. */
  now?: () => Date;
  /** A JOB gate of the cluster went PENDING: its agent should look at its gates now. */
  onGatesChange: (clusterId: string) => void;
  /** A pipeline's contexts, gates or promotions may have changed (the UI's live updates). */
  onPipelineChange: (name: string) => void;
  /** The rollouts of stages that declare one. */
  rollouts: Pick<RolloutRunner, 'beginStage' | 'evaluateAll'>;
}

/** setTimeout's longest delay; a later window change is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a user does to a gate: approve or reject an APPROVAL gate, or force any gate open (admins). */
export type GateDecision = 'approve' | 'reject' | 'force';

type Edge = Pipeline['spec']['edges'][number];

/**
 * The server's pipeline engine: the report and decision handlers call serviceReported, jobReported and decide,
 * route handlers evaluate a pipeline they changed. State lives in the store, so several replicas may each run one:
 * a promotion of an edge and context is recorded once (a unique row), and the replica that loses logs nothing.
 * The owner calls start() once at startup (arms the WINDOW timers) and close() at shutdown (clears them).
 */
export class PipelineRunner {
  readonly #deps: PipelineDeps;
  readonly #now: () => Date;
  /** Re-evaluations of edges with WINDOW gates, by pipeline id and edge. */
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(deps: PipelineDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /** Evaluates every pipeline: contexts missed while no replica ran are recorded, window timers armed. */
  async start(): Promise<void> {
    for (const pipeline of await listPipelines(this.#deps.db)) await this.evaluate(pipeline);
  }

  /** Stops the window timers. */
  close(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /**
   * An agent's report changed the service's status: turning healthy, a stage holding it may have settled at new
   * revisions; turning anything else, a soak of a HEALTH gate on that stage fails. Never throws.
   */
  async serviceReported(service: Service): Promise<void> {
    try {
      for (const pipeline of await listPipelines(this.#deps.db)) {
        const stage = pipeline.spec.stages.find((candidate) => candidate.services.some((s) => s.serviceId === service.id));
        if (!stage) continue;
        if (service.status === 'healthy') {
          await this.#stageReported(pipeline, stage.name);
          continue;
        }
        const soaking = pipeline.spec.edges.filter((edge) => edge.from === stage.name && edge.gates.some((gate) => gate.type === 'HEALTH'));
        for (const edge of soaking) await this.#evaluateEdge(pipeline, edge);
      }
    } catch (error) {
      this.#deps.log.error({ service: service.name, error: messageOf(error) }, 'pipeline evaluation failed');
    }
  }

  /** A pipeline was defined or changed: stages already settled get their contexts now, not at the next report. */
  async evaluate(pipeline: Pipeline): Promise<void> {
    for (const stage of pipeline.spec.stages) await this.#stageReported(pipeline, stage.name);
    for (const edge of pipeline.spec.edges) {
      this.#kickJobClusters(edge);
      await this.#evaluateEdge(pipeline, edge);
    }
  }

  /** The JOB gates the cluster's agent is to run: PENDING for a context, without an outcome yet. */
  async jobGates(clusterId: string): Promise<AgentGate[]> {
    const gates: AgentGate[] = [];
    for (const pipeline of await listPipelines(this.#deps.db)) {
      const rows = await listGates(this.#deps.db, pipeline.id);
      for (const edge of pipeline.spec.edges) {
        for (const gate of edge.gates) {
          if (gate.type !== 'JOB' || gate.job.clusterId !== clusterId) continue;
          const row = rows.find((candidate) => candidate.from === edge.from && candidate.to === edge.to && candidate.name === gate.name);
          if (row?.state !== 'PENDING' || !row.contextId) continue;
          gates.push({
            pipeline: pipeline.name,
            from: edge.from,
            to: edge.to,
            gate: gate.name,
            contextId: row.contextId,
            namespace: gate.job.namespace,
            jobName: gateJobName(pipeline.id, edge, gate.name, row.contextId),
            spec: gate.job.spec,
          });
        }
      }
    }
    return gates;
  }

  /**
   * A JOB gate's outcome, from the agent of its cluster: OPEN when the Job succeeded, CLOSED with its reason when it
   * failed.
   * @throws HttpError 404 for no such JOB gate of that cluster; 409 when the gate moved to a newer context.
   */
  async jobReported(clusterId: string, report: GateReport): Promise<void> {
    const pipeline = await getPipeline(this.#deps.db, report.pipeline).catch(() => undefined);
    const edge = pipeline?.spec.edges.find((candidate) => candidate.from === report.from && candidate.to === report.to);
    const gate = edge?.gates.find((candidate) => candidate.name === report.gate);
    if (!pipeline || !edge || gate?.type !== 'JOB' || gate.job.clusterId !== clusterId) {
      throw new HttpError(
        404,
        `this cluster runs no JOB gate ${report.gate} on ${report.from} → ${report.to} of pipeline ${report.pipeline}`,
      );
    }
    const decided = await decideGate(
      this.#deps.db,
      pipeline.id,
      { from: edge.from, to: edge.to, name: gate.name },
      {
        state: report.state,
        by: 'job',
        reason: report.reason,
        ...(report.logs === undefined ? {} : { logs: report.logs }),
        forced: false,
        contextId: report.contextId,
      },
    );
    if (!decided) throw new HttpError(409, `gate ${gate.name} moved to a newer context of stage ${edge.from}`);
    if (report.state === 'CLOSED')
      this.#notify(pipeline, edge, `gate ${gate.name} on ${edge.from} → ${edge.to} failed: ${report.reason}`, gate.name, 'error');
    await this.#evaluateEdge(pipeline, edge);
  }

  #kickJobClusters(edge: Edge): void {
    for (const gate of edge.gates) if (gate.type === 'JOB') this.#deps.onGatesChange(gate.job.clusterId);
  }

  /**
   * Applies a user's decision to the gate for its source stage's current context, then evaluates the edge.
   * @throws HttpError 404 for no such edge or gate, 400 for approve/reject of a gate that is not APPROVAL, 409 when the
   *   source stage has no context yet or a newer one superseded the gate's.
   */
  async decide(pipeline: Pipeline, gate: { from: string; to: string; name: string }, decision: GateDecision, by: string): Promise<void> {
    const edge = pipeline.spec.edges.find((candidate) => candidate.from === gate.from && candidate.to === gate.to);
    const spec = edge?.gates.find((candidate) => candidate.name === gate.name);
    if (!edge || !spec) throw new HttpError(404, `pipeline ${pipeline.name} has no gate ${gate.name} on edge ${gate.from} → ${gate.to}`);
    if (decision !== 'force' && spec.type !== 'APPROVAL') {
      throw new HttpError(400, `gate ${gate.name} is ${spec.type}: only APPROVAL gates are approved or rejected; an admin may force it`);
    }
    const context = (await currentContexts(this.#deps.db, pipeline.id)).get(gate.from);
    if (!context) throw new HttpError(409, `stage ${gate.from} has no promotion context yet: its services have not all been healthy`);
    const decided = await decideGate(this.#deps.db, pipeline.id, gate, {
      state: decision === 'reject' ? 'CLOSED' : 'OPEN',
      by,
      forced: decision === 'force',
      contextId: context.id,
    });
    if (!decided) throw new HttpError(409, `gate ${gate.name} moved to a newer context of stage ${gate.from}; look again`);
    if (decision === 'reject')
      this.#notify(pipeline, edge, `gate ${gate.name} on ${gate.from} → ${gate.to} was rejected by ${by}`, gate.name, 'error');
    await this.#evaluateEdge(pipeline, edge);
  }

  /**
   * Previews the promotion of the edge's source stage's current context on every target cluster: one preview per
   * target with criteria that would get a revision (a DONE one of the same source and live state is reused).
   * @throws HttpError 404 for no such edge, 409 when the source stage has no context yet, 400 when a source does not
   *   resolve.
   */
  async previewPromotion(pipeline: Pipeline, from: string, to: string, by: string): Promise<Preview[]> {
    const edge = pipeline.spec.edges.find((candidate) => candidate.from === from && candidate.to === to);
    if (!edge) throw new HttpError(404, `pipeline ${pipeline.name} has no edge ${from} → ${to}`);
    const context = (await currentContexts(this.#deps.db, pipeline.id)).get(from);
    if (!context) throw new HttpError(409, `stage ${from} has no promotion context yet: its services have not all been healthy`);
    const previews: Preview[] = [];
    for (const planned of await this.#planned(pipeline, edge, context)) {
      previews.push(
        await this.#deps.previews.ofChange(planned.service, {
          spec: planned.spec,
          values: planned.values,
          ref: planned.source.commit ?? planned.source.chartVersion ?? `revision ${planned.source.revision}`,
          requestedBy: by,
          origin: promotionOrigin(pipeline, edge, context),
        }),
      );
    }
    this.#deps.onPipelineChange(pipeline.name);
    return previews;
  }

  /** The previews of the edge's promotion of its source stage's current context, newest first. */
  async promotionPreviews(pipeline: Pipeline, edge: { from: string; to: string }): Promise<Preview[]> {
    const context = (await currentContexts(this.#deps.db, pipeline.id)).get(edge.from);
    return context ? await previewsOf(this.#deps.db, promotionOrigin(pipeline, edge, context)) : [];
  }

  /** An agent reported a preview: one of a pending promotion may settle whether it is offered. Never throws. */
  async previewReported(preview: Preview): Promise<void> {
    const [kind, pipelineId, from, to] = preview.origin?.split('/') ?? [];
    if (kind !== 'pipeline') return;
    try {
      const pipeline = (await listPipelines(this.#deps.db)).find((candidate) => candidate.id === pipelineId);
      const edge = pipeline?.spec.edges.find((candidate) => candidate.from === from && candidate.to === to);
      if (pipeline && edge) await this.#evaluateEdge(pipeline, edge);
    } catch (error) {
      this.#deps.log.error({ preview: preview.id, error: messageOf(error) }, 'pipeline evaluation failed');
    }
  }

  /** Starts the previews an approver will look at; a source that does not resolve is logged, not thrown. */
  async #previewForApproval(pipeline: Pipeline, edge: Edge, context: PromotionContext): Promise<void> {
    await this.previewPromotion(pipeline, edge.from, edge.to, `pipeline/${pipeline.name}`).catch((error: unknown) =>
      this.#deps.log.warn(
        { pipeline: pipeline.name, edge: `${edge.from} → ${edge.to}`, context: context.id, error: messageOf(error) },
        'promotion not previewed',
      ),
    );
  }

  /**
   * An edge with an APPROVAL gate is not offered for approval when the previews of every target that would get a
   * revision say it changes nothing on its cluster: the promotion is recorded with no services, as one of nothing new.
   * @returns whether it was recorded so.
   */
  async #changesNothing(pipeline: Pipeline, edge: Edge, context: PromotionContext): Promise<boolean> {
    if (!edge.gates.some((gate) => gate.type === 'APPROVAL')) return false;
    const planned = await this.#planned(pipeline, edge, context);
    if (planned.length === 0) return false;
    const previews = await previewsOf(this.#deps.db, promotionOrigin(pipeline, edge, context));
    const newest = (serviceId: string) => previews.find((preview) => preview.serviceId === serviceId);
    if (!planned.every(({ service }) => isEmptyPreview(newest(service.id)))) return false;
    const recorded = await recordPromotion(this.#deps.db, pipeline.id, {
      from: edge.from,
      to: edge.to,
      contextId: context.id,
      services: [],
      gates: [],
    });
    if (recorded) {
      const names = planned.map(({ service }) => service.name).join(', ');
      this.#notify(
        pipeline,
        edge,
        `${edge.from} → ${edge.to}: not offered, the preview of ${names} changes nothing on the target clusters`,
      );
    }
    return true;
  }

  /** The stage's rollout is done: its services are all at their promoted revisions. Never throws. */
  async stageRolledOut(pipelineName: string, stageName: string): Promise<void> {
    try {
      await this.#stageReported(await getPipeline(this.#deps.db, pipelineName), stageName);
    } catch (error) {
      this.#deps.log.error({ pipeline: pipelineName, stage: stageName, error: messageOf(error) }, 'pipeline evaluation failed');
    }
  }

  /**
   * Records a context when every service of the stage is healthy at revisions the current context does not hold, and
   * no rollout of the stage is under way (its services may be healthy at a mix of old and new revisions).
   */
  async #stageReported(pipeline: Pipeline, stageName: string): Promise<void> {
    const stage = pipeline.spec.stages.find((candidate) => candidate.name === stageName);
    if (!stage) return;
    const rollout = await currentRollout(this.#deps.db, { pipelineId: pipeline.id, stage: stageName });
    if (rollout?.state === 'RUNNING' || rollout?.state === 'PAUSED') return;
    const services = await Promise.all(
      stage.services.map((entry) => getServiceById(this.#deps.db, entry.serviceId).catch(() => undefined)),
    );
    if (services.some((service) => service?.status !== 'healthy')) return;
    const snapshot = (services as Service[]).map(contextServiceOf);
    const current = (await currentContexts(this.#deps.db, pipeline.id)).get(stageName);
    if (current && sameRevisions(current.services, snapshot)) return;
    const context = await recordContext(this.#deps.db, pipeline.id, stageName, snapshot, this.#now());
    this.#deps.log.info({ pipeline: pipeline.name, stage: stageName, context: context.id }, 'promotion context recorded');
    this.#deps.onPipelineChange(pipeline.name);
    const revisions = snapshot.map(
      (entry, index) => `${services[index]!.name} rev ${entry.revision}${entry.commit ? ` ${entry.commit.slice(0, 7)}` : ''}`,
    );
    for (const edge of pipeline.spec.edges.filter((candidate) => candidate.from === stageName)) {
      this.#kickJobClusters(edge);
      if (edge.gates.some((gate) => gate.type === 'APPROVAL')) await this.#previewForApproval(pipeline, edge, context);
      for (const gate of edge.gates.filter((candidate) => candidate.type === 'APPROVAL')) {
        const message = `gate ${gate.name} on ${edge.from} → ${edge.to} waits for approval of stage ${stageName} at ${revisions.join(', ')}`;
        this.#notify(pipeline, edge, message, gate.name);
      }
      await this.#evaluateEdge(pipeline, edge);
    }
  }

  /** Evaluates the edge's gates and promotes when they are open; whatever happened, the pipeline's view changed. */
  async #evaluateEdge(pipeline: Pipeline, edge: Edge): Promise<void> {
    try {
      await this.#promoteWhenOpen(pipeline, edge);
    } finally {
      this.#deps.onPipelineChange(pipeline.name);
    }
  }

  /** Promotes the source stage's current context along the edge when every gate is OPEN for it, once. */
  async #promoteWhenOpen(pipeline: Pipeline, edge: Edge): Promise<void> {
    const { db } = this.#deps;
    const context = (await currentContexts(db, pipeline.id)).get(edge.from);
    if (!context || (await wasPromoted(db, pipeline.id, edge, context.id))) return;
    if (await this.#changesNothing(pipeline, edge, context)) return;
    await this.#evaluateAutomatic(pipeline, edge, context);
    const gates = (await listGates(db, pipeline.id)).filter((gate) => gate.from === edge.from && gate.to === edge.to);
    if (!gates.every((gate) => gate.state === 'OPEN' && gate.contextId === context.id)) return;
    const services = await this.#promote(pipeline, edge, context);
    const recorded = await recordPromotion(db, pipeline.id, {
      from: edge.from,
      to: edge.to,
      contextId: context.id,
      services,
      gates: gates.map((gate: Gate) => ({ name: gate.name, type: gate.type, decidedBy: gate.decidedBy, forced: gate.forced })),
    });
    if (!recorded) return;
    const edgeName = `${edge.from} → ${edge.to}`;
    this.#deps.log.info({ pipeline: pipeline.name, edge: edgeName, context: context.id, services: services.length }, 'promoted');
    const moved = services.map(
      (service) => `revision ${service.revision} at ${service.commit?.slice(0, 7) ?? service.chartVersion ?? 'its source'}`,
    );
    this.#notify(
      pipeline,
      edge,
      moved.length > 0
        ? `promoted ${edgeName}: ${moved.join(', ')}`
        : `${edgeName}: nothing to promote, every target with criteria already runs its source`,
    );
  }

  /**
   * Sets the edge's WINDOW and HEALTH gates for the clock's now, closes any gate still PENDING past its timeout, and
   * arms a timer for the soonest moment one of them can change: a window boundary, the next check of a soak, a
   * timeout. A gate a timeout closed stays CLOSED for the context (an approver may still approve it).
   */
  async #evaluateAutomatic(pipeline: Pipeline, edge: Edge, context: PromotionContext): Promise<void> {
    const key = `${pipeline.id}/${edge.from}/${edge.to}`;
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    const now = this.#now();
    const rows = (await listGates(this.#deps.db, pipeline.id)).filter((row) => row.from === edge.from && row.to === edge.to);
    let soonest: Date | undefined;
    for (const gate of edge.gates) {
      const row = rows.find((candidate) => candidate.name === gate.name);
      const current = row?.contextId === context.id ? row.state : 'PENDING';
      if (current === 'CLOSED') continue;
      let evaluation: { state: GateState; reason: string; at?: Date | undefined } | undefined;
      if (gate.type === 'WINDOW') {
        const state = windowState(gate.window, now);
        evaluation = { state: state.open ? 'OPEN' : 'PENDING', reason: state.reason, at: state.changesAt };
      } else if (gate.type === 'HEALTH' && row?.state === 'PENDING' && row.contextId === context.id) {
        const check = await checkHealth(gate.health, new Date(context.createdAt), now, await this.#unhealthy(pipeline, edge.from));
        evaluation = { state: check.state, reason: check.reason, at: check.checkAt };
        if (check.state === 'CLOSED')
          this.#notify(pipeline, edge, `gate ${gate.name} on ${edge.from} → ${edge.to} failed: ${check.reason}`, gate.name, 'error');
      }
      const deadline = gate.timeout ? new Date(new Date(context.createdAt).getTime() + parseDuration(gate.timeout)) : undefined;
      if (deadline && (evaluation?.state ?? current) === 'PENDING') {
        if (now >= deadline) {
          const reason = `timed out: still pending ${gate.timeout} after stage ${edge.from} settled at this context${evaluation ? ` (${evaluation.reason})` : ''}`;
          evaluation = { state: 'CLOSED', reason };
          this.#notify(pipeline, edge, `gate ${gate.name} on ${edge.from} → ${edge.to} ${reason}`, gate.name, 'error');
        } else if (!soonest || deadline < soonest) soonest = deadline;
      }
      if (!evaluation) continue;
      await setEvaluatedGate(this.#deps.db, pipeline.id, { ...edge, name: gate.name }, { ...evaluation, contextId: context.id });
      if (evaluation.at && (!soonest || evaluation.at < soonest)) soonest = evaluation.at;
    }
    if (!soonest) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(key);
        void getPipeline(this.#deps.db, pipeline.name)
          .then(async (current) => {
            const same = current.spec.edges.find((candidate) => candidate.from === edge.from && candidate.to === edge.to);
            if (same) await this.#evaluateEdge(current, same);
          })
          .catch((error: unknown) => this.#deps.log.warn({ pipeline: pipeline.name, error: messageOf(error) }, 'gate evaluation failed'));
      },
      Math.min(Math.max(soonest.getTime() - now.getTime(), 0), MAX_TIMER_MS),
    );
    timer.unref();
    this.#timers.set(key, timer);
  }

  /** The stage's services not healthy now. */
  async #unhealthy(pipeline: Pipeline, stageName: string): Promise<Array<{ name: string; status: string }>> {
    const stage = pipeline.spec.stages.find((candidate) => candidate.name === stageName)!;
    const services = await Promise.all(
      stage.services.map((entry) => getServiceById(this.#deps.db, entry.serviceId).catch(() => undefined)),
    );
    return services.flatMap((service, index) =>
      service?.status === 'healthy'
        ? []
        : [{ name: service?.name ?? stage.services[index]!.serviceId, status: service?.status ?? 'missing' }],
    );
  }

  #notify(pipeline: Pipeline, edge: Edge, message: string, gate?: string, severity: 'info' | 'error' = 'info'): void {
    this.#deps.notifier.notify({
      type: 'pipeline.update',
      severity,
      pipeline: { id: pipeline.id, name: pipeline.name, edge: `${edge.from} → ${edge.to}`, ...(gate ? { gate } : {}) },
      message,
    });
  }

  /**
   * Moves each target service with criteria to its source's commit or chart version and copies its secrets.
   * @returns the services that got a revision; one already running its source's commit (or chart version) with the
   *   copied secrets' values is left as it is and out of the list, so a promotion of nothing new lists none.
   */
  async #promote(pipeline: Pipeline, edge: Edge, context: PromotionContext): Promise<PromotedService[]> {
    const { db, box, sources } = this.#deps;
    const admitted = [];
    for (const plan of await this.#planned(pipeline, edge, context)) {
      const resolved = await sources.resolveSpec(plan.spec);
      const rejection = await rejectionOf(db, plan.service, resolved.digest);
      if (!rejection) {
        admitted.push({ ...plan, resolved });
        continue;
      }
      const why = `the content of ${rejection.commit.slice(0, 12)} was rejected: ${rejection.reason}`;
      this.#notify(pipeline, edge, `${plan.service.name} not promoted along ${edge.from} → ${edge.to}: ${why}`, undefined, 'error');
    }
    const rollout = pipeline.spec.stages.find((stage) => stage.name === edge.to)?.rollout;
    // Pinned before their revisions are recorded, so each waits for its wave.
    const rolling =
      rollout && admitted.length > 0
        ? await this.#deps.rollouts.beginStage(
            pipeline,
            edge.to,
            rollout,
            admitted.map((plan) => plan.service),
            `promotion from ${edge.from}`,
          )
        : undefined;
    const promoted: PromotedService[] = [];
    for (const { service, source, spec, values, copied, resolved } of admitted) {
      const { service: updated, revised } = await updateService(
        db,
        box,
        service.id,
        { spec, configuration: values.configuration },
        resolved,
        {
          by: `pipeline/${pipeline.name}`,
          message: `promoted from stage ${edge.from}`,
        },
      );
      if (revised) this.#deps.onChange(updated);
      promoted.push({
        serviceId: service.id,
        sourceId: source.serviceId,
        commit: source.commit,
        chartVersion: source.chartVersion,
        secrets: copied,
        // A target pinned by a rollback or a rollout records the revision, which waits for the pin's release.
        revision: updated.pendingRevisionNumber ?? updated.revision.number,
      });
    }
    if (rolling) await this.#deps.rollouts.evaluateAll([rolling]);
    return promoted;
  }

  /**
   * What a promotion of the context along the edge would give each target service with criteria: its spec at the
   * source's commit or chart version, and its values with the listed configuration keys copied from the source. A
   * target already running its source's commit (or chart version) with those keys' values is left out: a revision
   * would only pin a ref to the commit it resolves to, and a redeploy of the same content would count as a release.
   */
  async #planned(pipeline: Pipeline, edge: { to: string }, context: PromotionContext): Promise<PlannedPromotion[]> {
    const { db, box } = this.#deps;
    const targets = pipeline.spec.stages.find((stage) => stage.name === edge.to)?.services ?? [];
    const planned: PlannedPromotion[] = [];
    for (const target of targets) {
      const source = target.criteria && context.services.find((entry) => entry.serviceId === target.criteria!.sourceId);
      if (!target.criteria || !source) continue;
      const service = await getServiceById(db, target.serviceId);
      const secrets = await serviceSecrets(db, box, [source.serviceId, service.id]);
      const sourceConfiguration = secrets.get(source.serviceId)?.configuration ?? {};
      const copied = target.criteria.secrets.filter((key) => key in sourceConfiguration);
      const current = secrets.get(service.id) ?? { configuration: {}, secretValues: {} };
      if (runsSource(service.revision, source) && copied.every((key) => current.configuration[key] === sourceConfiguration[key])) continue;
      const configuration = { ...current.configuration, ...Object.fromEntries(copied.map((key) => [key, sourceConfiguration[key]!])) };
      planned.push({
        service,
        source,
        spec: promotedSpec(service.spec, source),
        values: { configuration, secretValues: current.secretValues },
        copied,
      });
    }
    return planned;
  }
}

interface PlannedPromotion {
  service: Service;
  source: ContextService;
  spec: ServiceSpec;
  values: ServiceSecrets;
  /** The configuration keys copied from the source. */
  copied: string[];
}

/** The origin of a promotion's previews (store/previews.ts): one per pipeline, edge and source context. */
function promotionOrigin(pipeline: Pipeline, edge: { from: string; to: string }, context: PromotionContext): string {
  return ['pipeline', pipeline.id, edge.from, edge.to, context.id].join('/');
}

/** A DONE preview that creates, changes and deletes nothing, with no error. */
function isEmptyPreview(preview: Preview | undefined): boolean {
  const result = preview?.state === 'DONE' ? (preview.result as PreviewReport['result']) : undefined;
  return !!result && [result.create, result.change, result.delete, result.errors].every((list) => list.length === 0);
}

/** The name of the Job a JOB gate runs for a context: one per gate and context, so a new context runs a new Job. */
export function gateJobName(pipelineId: string, edge: { from: string; to: string }, gate: string, contextId: string): string {
  const hash = createHash('sha256').update([pipelineId, edge.from, edge.to, gate, contextId].join('\0'));
  return `gate-${hash.digest('hex').slice(0, 16)}`;
}

/** The target's revision runs the source's commit (git sources) or chart version (helm sources), whatever its ref says. */
function runsSource(revision: Pick<Service['revision'], 'spec' | 'commit' | 'chartVersion'>, source: ContextService): boolean {
  if (revision.spec.git && source.commit) return revision.commit === source.commit;
  if (revision.spec.helm && source.chartVersion) return revision.chartVersion === source.chartVersion;
  return true;
}

/** The target's spec at the source's commit (git sources) or chart version (helm sources). */
function promotedSpec(spec: ServiceSpec, source: ContextService): ServiceSpec {
  return {
    ...spec,
    ...(spec.git && source.commit ? { git: { ...spec.git, ref: source.commit } } : {}),
    ...(spec.helm && source.chartVersion ? { helm: { ...spec.helm, version: source.chartVersion } } : {}),
  };
}

function contextServiceOf(service: Service): ContextService {
  return {
    serviceId: service.id,
    revision: service.revision.number,
    commit: service.revision.commit,
    chartVersion: service.revision.chartVersion,
  };
}

function sameRevisions(a: readonly ContextService[], b: readonly ContextService[]): boolean {
  const key = (services: readonly ContextService[]) =>
    services
      .map((service) => `${service.serviceId}@${service.revision}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}
