/**
 * Progressive rollouts (issue 43, part 2) of a global service's new revisions and of a pipeline stage's promotions,
 * driven by events as pipelines are: an agent's report of a copy, a soak's or a deadline's timer, a user's pause,
 * resume or abort. A copy is one service the rollout moves: a copy of the global service, or a service of the stage.
 *
 * A global service with a `rollout` gets one whenever its copies are about to get a new revision (a template change, a
 * commit on its ref, a chart version); a stage with a `rollout` whenever a promotion is about to move its services
 * (`beginStage`). `begin` plans the copies into waves and batches (src/rollout/plan.ts) and pins them where they
 * are (store/rollouts.ts), so the new revision is recorded on each copy as one that waits. The runner then releases
 * the first batch of the first wave (the pin is lifted, the agent applies the newest revision) and, as reports come,
 * the next batch once the released ones are healthy. A wave all healthy soaks: its copies must stay healthy, and the
 * PromQL query hold, for `soak` (pipeline/health-gate.ts's checks), then the next wave starts. When every wave is
 * done, the rollout is DONE and no copy is pinned any more.
 *
 * A copy that reports failed, or is not healthy `progressDeadline` after its release, fails the rollout: with
 * `onFailure: pause` it stops where it is (PAUSED, resume to retry, abort to undo); with `rollback` every copy it
 * changed goes back to the revision it ran before (part 3's rollback, pinned) and it is FAILED. The copies of later
 * waves never leave their revision. State is saved before it is acted on, and acting is repeated until it took: a
 * released copy still pinned is released again, a rollback marked pending is made again (a second rollback of the same
 * revision changes nothing), so a crash or a second replica loses nothing and never half-applies a step.
 *
 * Each step a rollout takes (started, a wave done, paused, resumed, failed, aborted, done) is a `rollout.update`
 * fleet event for notification routers, sent by the replica whose write took.
 */
import type { Kysely } from 'kysely';
import type { ApiRollout, RolloutSpec } from '../api/rollouts.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { HttpError } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import type { FleetEvent, Notifier } from './notifier.ts';
import { checkHealth } from '../pipeline/health-gate.ts';
import { messageOf } from '../problems.ts';
import { type CopyFacts, copyOutcome, type PlannedCluster, planCopies, type RolloutCopy, waveNames } from '../rollout/plan.ts';
import { type Cluster, getCluster, listClusters, setAgentVersionPin } from '../store/clusters.ts';
import { AGENT_NAME, imageTag } from '../install/agent.ts';
import { type GlobalService, globalServiceById, listGlobalServices } from '../store/global-services.ts';
import { listPipelines, type Pipeline } from '../store/pipelines.ts';
import { addRejection, rejectedDigests } from '../store/rejections.ts';
import { listRevisions, releaseService, rollbackService } from '../store/revisions.ts';
import {
  currentRollout,
  type Rollout,
  type RolloutOwner,
  rolloutPin,
  rolloutsHolding,
  saveRollout,
  startRollout,
  unfinishedRollouts,
} from '../store/rollouts.ts';
import type { Database } from '../store/schema.ts';
import { getService, getServiceById, listServices, type Service, type ServiceRef } from '../store/services.ts';

export interface RolloutDeps {
  db: Kysely<Database>;
  box: SecretBox;
  log: Logger;
  /** A copy was released or rolled back: its agent should hear of it now. */
  onChange: (service: ServiceRef) => void;
  /** A rollout changed (the UI's live updates; a stage's pipeline looks at the stage again once it is done). */
  onRolloutChange: (subject: RolloutSubject, rollout: Rollout) => void;
  /** rollout.update events: each step a rollout takes. */
  notifier: Pick<Notifier, 'notify'>;
  /** The clock soaks and deadlines are measured with; default the system's. */
  now?: () => Date;
}

/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a write that lost to another replica's is tried again over the state it wrote. */
const MAX_RETRIES = 5;

export type RolloutAction = 'pause' | 'resume' | 'abort';

/** What a rollout belongs to, as the runner needs it. */
export interface RolloutSubject {
  owner: RolloutOwner;
  /** The global service's name, or `<pipeline>/<stage>`: in pins, logs and messages. */
  name: string;
  /** `globalservice/<name>` or `pipeline/<pipeline>/<stage>`: what a notification router's regex matches. */
  path: string;
  /** The pipeline's and the stage's names, for a stage's rollout. */
  pipeline?: string;
  stage?: string;
}

export function globalServiceSubject(global: Pick<GlobalService, 'id' | 'name'>): RolloutSubject {
  return { owner: { globalServiceId: global.id }, name: global.name, path: `globalservice/${global.name}` };
}

/**
 * The fleet's agents moving to `version` (kept-agents.ts): the copies are the clusters' agent services, and a copy is
 * healthy only once its agent pings with that version. `@agents` has a character no global service's or pipeline's
 * name has, so its pin is no other rollout's.
 */
export function agentsSubject(version: string): RolloutSubject {
  return { owner: { agentVersion: version }, name: '@agents', path: 'agents' };
}

export function stageSubject(pipeline: Pick<Pipeline, 'id' | 'name'>, stage: string): RolloutSubject {
  const name = `${pipeline.name}/${stage}`;
  return { owner: { pipelineId: pipeline.id, stage }, name, path: `pipeline/${name}`, pipeline: pipeline.name, stage };
}

export class RolloutRunner {
  readonly #deps: RolloutDeps;
  readonly #now: () => Date;
  /** The next evaluation of each RUNNING rollout (a soak's check, a deadline), by rollout id. */
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(deps: RolloutDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /** Evaluates every RUNNING rollout (re-arming its timers) and finishes rollbacks a stop left pending. */
  async start(): Promise<void> {
    for (const rollout of await unfinishedRollouts(this.#deps.db)) {
      const subject = await this.#subjectOf(rollout);
      if (subject) await this.#evaluate(subject, rollout);
    }
  }

  close(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /**
   * Called before `services` get a new revision: for each global service with a rollout that owns some of them, a
   * rollout starts (superseding one under way) and pins its copies, so the revision waits for their wave.
   * @returns the subjects a rollout started for; `evaluateAll` them once the revisions are recorded.
   */
  async begin(services: ReadonlyArray<Pick<Service, 'ownerId'>>, cause: string): Promise<RolloutSubject[]> {
    const owners = new Set(services.flatMap((service) => (service.ownerId ? [service.ownerId] : [])));
    if (owners.size === 0) return [];
    const started: RolloutSubject[] = [];
    for (const global of await listGlobalServices(this.#deps.db, this.#deps.box)) {
      if (!owners.has(global.id) || !global.rollout) continue;
      const subject = globalServiceSubject(global);
      const copies = await this.#copiesOf(subject, (service) => service.ownerId === global.id);
      started.push(await this.#startRollout(subject, global.rollout, copies, cause));
    }
    return started;
  }

  /**
   * Called before a promotion moves `services` of the stage, which declares `spec`: a rollout of them starts
   * (superseding one under way) and pins them, so the promoted revisions wait for their wave.
   * @returns the subject; `evaluateAll` it once the revisions are recorded.
   */
  async beginStage(
    pipeline: Pick<Pipeline, 'id' | 'name'>,
    stage: string,
    spec: RolloutSpec,
    services: ReadonlyArray<Pick<Service, 'id'>>,
    cause: string,
  ): Promise<RolloutSubject> {
    return this.beginServices(stageSubject(pipeline, stage), spec, services, cause);
  }

  /**
   * Called before `services` get new revisions for `subject` (a stage's promotion, the agents' upgrade in
   * kept-agents.ts): a rollout of them starts (superseding the subject's one under way) and pins them, so the new
   * revisions wait for their wave.
   * @returns the subject; `evaluateAll` it once the revisions are recorded.
   */
  async beginServices(
    subject: RolloutSubject,
    spec: RolloutSpec,
    services: ReadonlyArray<Pick<Service, 'id'>>,
    cause: string,
  ): Promise<RolloutSubject> {
    const ids = new Set(services.map((service) => service.id));
    return this.#startRollout(subject, spec, await this.#copiesOf(subject, (service) => ids.has(service.id)), cause);
  }

  /**
   * For the agents' upgrade (kept-agents.ts), which sets each cluster's pin after the rollout began: when the
   * rollout has already ended (a canary past its deadline while the pins were still being set, on a loaded server),
   * every cluster is pinned again to the version its agent service runs, undoing pins set after the rollout's own
   * restore.
   * @returns whether the rollout ended, so the upgrade sets no more pins.
   */
  async settleAgentPins(subject: RolloutSubject): Promise<boolean> {
    const rollout = await currentRollout(this.#deps.db, subject.owner);
    if (!rollout || (rollout.state !== 'FAILED' && rollout.state !== 'ABORTED')) return false;
    await this.#restoreAgentPins(rollout);
    return true;
  }

  /** An agent pinged with another version than before: the agents' rollout holding its agent service may move on. Never throws. */
  async agentPinged(cluster: Pick<Cluster, 'id' | 'name'>): Promise<void> {
    const service = await getService(this.#deps.db, cluster.id, AGENT_NAME).catch(() => undefined);
    if (service?.spec.agent) await this.serviceReported(service);
  }

  async #startRollout(subject: RolloutSubject, spec: RolloutSpec, services: PlannedCluster[], cause: string): Promise<RolloutSubject> {
    const copies = planCopies(spec, services);
    const rollout = await startRollout(
      this.#deps.db,
      { owner: subject.owner, pinBy: rolloutPin(subject.name), cause, spec, copies },
      this.#now(),
    );
    this.#deps.log.info({ rollout: subject.name, cause, copies: copies.length }, 'rollout started');
    this.#announce(subject, undefined, rollout);
    return subject;
  }

  /** Evaluates the subjects' current rollouts: the first batch goes once begin's revisions are recorded. */
  async evaluateAll(subjects: readonly RolloutSubject[]): Promise<void> {
    for (const subject of subjects) {
      const rollout = await currentRollout(this.#deps.db, subject.owner);
      if (rollout) await this.#evaluate(subject, rollout);
    }
  }

  /** An agent's report changed a service's status: the rollouts holding it may move on, or fail. Never throws. */
  async serviceReported(service: Service): Promise<void> {
    try {
      for (const rollout of await rolloutsHolding(this.#deps.db, service.id)) {
        const subject = await this.#subjectOf(rollout);
        if (subject) await this.#evaluate(subject, rollout);
      }
    } catch (error) {
      this.#deps.log.error({ service: service.name, error: messageOf(error) }, 'rollout evaluation failed');
    }
  }

  /**
   * A user's pause (RUNNING → PAUSED), resume (PAUSED → RUNNING; failed copies are given a new deadline) or abort (the
   * copies it changed go back to the revision they ran; the others stay; ABORTED).
   * @throws HttpError 404 when the subject has no rollout, 409 when the action does not apply to its state.
   */
  async act(subject: RolloutSubject, action: RolloutAction, by: string): Promise<Rollout> {
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const rollout = await currentRollout(this.#deps.db, subject.owner);
      if (!rollout) throw new HttpError(404, `${subject.path} has no rollout`);
      const next = actedOn(rollout, action, by, this.#now());
      if (typeof next === 'string') throw new HttpError(409, next);
      const saved = await saveRollout(this.#deps.db, next, this.#now());
      if (!saved) continue;
      this.#deps.log.info({ rollout: subject.name, action, by }, 'rollout changed by a user');
      this.#announce(subject, rollout, saved);
      await this.#evaluate(subject, saved);
      return (await currentRollout(this.#deps.db, subject.owner))!;
    }
    throw new HttpError(409, `the rollout of ${subject.name} kept changing; try again`);
  }

  /**
   * The subject's newest rollout as the API shows it.
   * @param declared whether the subject declares a rollout (for the 404's words)
   * @throws HttpError 404 when it has had none.
   */
  async status(subject: RolloutSubject, declared: boolean): Promise<ApiRollout> {
    const rollout = await this.latest(subject);
    if (!rollout)
      throw new HttpError(
        404,
        `${subject.path} has had no rollout: it has ${declared ? 'had no new revision since it declared one' : 'no rollout declared'}`,
      );
    return rollout;
  }

  /** The subject's newest rollout as the API shows it, or undefined. */
  async latest(subject: RolloutSubject): Promise<ApiRollout | undefined> {
    const rollout = await currentRollout(this.#deps.db, subject.owner);
    if (!rollout) return undefined;
    const revisions = new Map<string, number | null>();
    for (const copy of rollout.copies)
      revisions.set(copy.serviceId, (await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined))?.revision.number ?? null);
    return {
      id: rollout.id,
      globalService: 'globalServiceId' in subject.owner ? subject.name : null,
      agentVersion: 'agentVersion' in subject.owner ? subject.owner.agentVersion : null,
      pipeline: subject.pipeline && subject.stage ? { name: subject.pipeline, stage: subject.stage } : null,
      state: rollout.state,
      cause: rollout.cause,
      reason: rollout.reason,
      wave: rollout.wave,
      waves: waveNames(rollout.spec, rollout.copies),
      soakingSince: rollout.soakingSince,
      copies: rollout.copies.map((copy) => ({
        cluster: copy.cluster,
        service: copy.service,
        wave: copy.wave,
        batch: copy.batch,
        state: copy.state,
        from: copy.from,
        revision: revisions.get(copy.serviceId) ?? null,
        reason: copy.reason,
        releasedAt: copy.releasedAt,
      })),
      waitingFor: rolloutWaits(rollout),
      createdAt: rollout.createdAt,
      updatedAt: rollout.updatedAt,
    };
  }

  /** Moves the rollout as far as it can go now, saving each step before acting on it; re-arms its timer. */
  async #evaluate(subject: RolloutSubject, read: Rollout): Promise<void> {
    clearTimeout(this.#timers.get(read.id));
    this.#timers.delete(read.id);
    let rollout: Rollout | undefined = read;
    for (let attempt = 0; attempt < MAX_RETRIES && rollout; attempt++) {
      await this.#finishPending(subject, rollout);
      if (rollout.state !== 'RUNNING') return;
      const step = await this.#step(subject, rollout);
      if (!step.changed) {
        if (step.checkAt) this.#arm(subject, rollout, step.checkAt);
        return;
      }
      const saved = await saveRollout(this.#deps.db, step.rollout, this.#now());
      if (saved) this.#announce(subject, rollout, saved);
      // Another replica wrote first: go on from what it wrote.
      rollout = saved ?? (await currentRollout(this.#deps.db, subject.owner));
    }
  }

  /**
   * One step: released copies that turned healthy or failed, the next batch released, a soak checked, the next wave.
   * @returns the rollout as it should be saved (changed), or when to look again.
   */
  async #step(subject: RolloutSubject, rollout: Rollout): Promise<{ rollout: Rollout; changed: boolean; checkAt?: Date }> {
    const now = this.#now();
    const copies = rollout.copies.map((copy) => ({ ...copy }));
    let soonest: Date | undefined;
    for (const copy of copies.filter((candidate) => candidate.state === 'RELEASED')) {
      const outcome = copyOutcome(rollout.spec, copy, await this.#facts(subject, copy), now);
      if (outcome.state === 'RELEASED') soonest = earlier(soonest, outcome.deadline);
      else if (outcome.state === 'HEALTHY') copy.state = 'HEALTHY';
      else return { rollout: failed({ ...rollout, copies }, copy, outcome.reason, now), changed: true };
    }
    const changedCopies = copies.some((copy, index) => copy.state !== rollout.copies[index]!.state);
    const waves = waveNames(rollout.spec, copies);
    if (rollout.wave >= waves.length) return { rollout: { ...rollout, copies, state: 'DONE', reason: null }, changed: true };
    const wave = copies.filter((copy) => copy.wave === rollout.wave && copy.state !== 'SKIPPED');
    // A wave that selects no cluster (or only pinned ones) has nothing to soak.
    if (wave.length === 0) {
      const next = rollout.wave + 1;
      return {
        rollout: { ...rollout, copies, wave: next, soakingSince: null, ...(next >= waves.length ? { state: 'DONE' as const } : {}) },
        changed: true,
      };
    }
    if (wave.some((copy) => copy.state === 'RELEASED'))
      return { rollout: { ...rollout, copies }, changed: changedCopies, ...(soonest ? { checkAt: soonest } : {}) };
    const waiting = wave.filter((copy) => copy.state === 'WAITING');
    if (waiting.length > 0) {
      const batch = Math.min(...waiting.map((copy) => copy.batch));
      for (const copy of waiting.filter((candidate) => candidate.batch === batch))
        Object.assign(copy, { state: 'RELEASED', releasedAt: now.toISOString() });
      this.#deps.log.info({ rollout: subject.name, wave: waves[rollout.wave], batch }, 'rollout releases a batch');
      return { rollout: { ...rollout, copies }, changed: true };
    }
    const soakingSince = rollout.soakingSince ?? now.toISOString();
    const check = await checkHealth(
      {
        soak: rollout.spec.soak,
        ...(rollout.spec.interval ? { interval: rollout.spec.interval } : {}),
        ...(rollout.spec.prometheus ? { prometheus: rollout.spec.prometheus } : {}),
      },
      new Date(soakingSince),
      now,
      await this.#unhealthy(
        subject,
        copies.filter((copy) => copy.wave <= rollout.wave && copy.state === 'HEALTHY'),
      ),
    );
    if (check.state === 'CLOSED') {
      const message = `wave ${waves[rollout.wave]}: ${check.reason}`;
      return { rollout: failed({ ...rollout, copies, soakingSince }, undefined, message, now), changed: true };
    }
    if (check.state === 'PENDING') {
      const changed = changedCopies || rollout.soakingSince === null;
      return { rollout: { ...rollout, copies, soakingSince }, changed, ...(check.checkAt ? { checkAt: check.checkAt } : {}) };
    }
    const next = rollout.wave + 1;
    return {
      rollout: { ...rollout, copies, wave: next, soakingSince: null, ...(next >= waves.length ? { state: 'DONE' as const } : {}) },
      changed: true,
    };
  }

  /**
   * Makes what the saved state says true: a RELEASED copy still pinned by the rollout is released, a copy marked for a
   * rollback is rolled back (pinned) and the mark cleared. Each is repeated until it took.
   */
  async #finishPending(subject: RolloutSubject, rollout: Rollout): Promise<void> {
    const pin = rolloutPin(subject.name);
    let cleared = false;
    await this.#keepOut(subject, rollout);
    for (const copy of rollout.copies) {
      const service = await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined);
      if (!service) continue;
      if ((copy.state === 'RELEASED' || copy.state === 'HEALTHY') && service.pinned?.by === pin) {
        const { service: released, moved } = await releaseService(this.#deps.db, service.id, this.#now());
        if (moved) this.#deps.onChange(released);
      }
      if (copy.state === 'ROLLED_BACK' && copy.rollbackPending) {
        const back = await rollbackService(
          this.#deps.db,
          service.id,
          copy.from,
          { by: pin, message: `rollout ${rollout.state.toLowerCase()}: back to revision ${copy.from}` },
          this.#now(),
        );
        this.#deps.onChange(back);
        copy.rollbackPending = false;
        cleared = true;
      }
    }
    // Also an abort before any release, which rolls nothing back.
    const untouched = rollout.copies.every((copy) => copy.state === 'WAITING' || copy.state === 'SKIPPED');
    const ended = rollout.state === 'FAILED' || rollout.state === 'ABORTED';
    if ('agentVersion' in subject.owner && (cleared || (ended && untouched))) await this.#restoreAgentPins(rollout);
    if (cleared) {
      const saved = await saveRollout(this.#deps.db, rollout, this.#now());
      if (saved) Object.assign(rollout, saved);
    }
  }

  /**
   * Before copies go back, the content the rollout delivered (what a copy marked for a rollback runs, when it is not
   * what it ran before) is kept from coming back: noted on the copy (`rolledBack`, which the chart tracker reads), and
   * for git sources rejected for every copy (part 3's rejections, per service). A tracker would otherwise record it
   * again on the copies it left, and start the same failing rollout over at its next poll. The next commit that
   * changes the folder, or the next chart version, flows as usual.
   */
  async #keepOut(subject: RolloutSubject, rollout: Rollout): Promise<void> {
    const rejected = new Map<string, { commit: string; spec: Service['spec'] }>();
    for (const copy of rollout.copies.filter((candidate) => candidate.state === 'ROLLED_BACK' && candidate.rollbackPending)) {
      const service = await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined);
      const before = service && (await listRevisions(this.#deps.db, service.id)).find((revision) => revision.number === copy.from);
      if (!service || service.revision.digest === before?.digest) continue;
      const { digest, chartVersion, commit, spec } = service.revision;
      copy.rolledBack = { digest, chartVersion };
      if (digest && commit && spec.git && spec.repositoryId) rejected.set(digest, { commit, spec });
    }
    const reason = `rollout of ${subject.name} ${rollout.state === 'ABORTED' ? 'aborted' : 'failed'}: ${rollout.reason ?? ''}`;
    for (const [digest, { commit, spec }] of rejected) {
      for (const copy of rollout.copies) {
        const service = await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined);
        if (!service || (await rejectedDigests(this.#deps.db, service)).has(digest)) continue;
        await addRejection(this.#deps.db, {
          repositoryId: spec.repositoryId!,
          folder: spec.git!.folder ?? '',
          digest,
          commit,
          serviceId: service.id,
          reason,
          by: rolloutPin(subject.name),
        });
      }
    }
  }

  /**
   * What the copy's service says now. An agent service applied and healthy is not enough for the agents' rollout: its
   * Deployment can be ready while the new agent never reached the server, so the agent must have pinged with the
   * version (the issue's rule: a new agent that does not ping with it in time is rolled back).
   */
  async #facts(subject: RolloutSubject, copy: RolloutCopy): Promise<CopyFacts> {
    const service = await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined);
    if (!service || service.deletedAt !== null) return { gone: true, status: 'gone', applied: false, revision: 0, errors: [] };
    const facts = {
      gone: false,
      status: service.status,
      applied: service.appliedRevisionNumber === service.revision.number && service.pinned === null,
      revision: service.revision.number,
      errors: service.errors.map((error) => `${error.source}: ${error.message}`),
    };
    if (!('agentVersion' in subject.owner) || facts.status !== 'healthy') return facts;
    const wanted = subject.owner.agentVersion;
    const running = (await getCluster(this.#deps.db, copy.cluster).catch(() => undefined))?.agentVersion ?? null;
    return running === wanted ? facts : { ...facts, status: `running agent ${running ?? 'none'}, not ${wanted}` };
  }

  /**
   * After the agents' rollout FAILED or was ABORTED (its rollbacks made): each cluster is pinned to the version its
   * agent service runs again, so that the cluster wants what it runs, and its next ping makes no revision of the
   * version that failed.
   */
  async #restoreAgentPins(rollout: Rollout): Promise<void> {
    for (const copy of rollout.copies) {
      const service = await getServiceById(this.#deps.db, copy.serviceId).catch(() => undefined);
      const version = service?.revision.spec.agent && imageTag(service.revision.spec.agent.image);
      if (!version) continue;
      await setAgentVersionPin(this.#deps.db, copy.cluster, version).catch(() => undefined);
    }
  }

  /** The copies among `copies` whose service is not healthy now (a soak fails on any). */
  async #unhealthy(subject: RolloutSubject, copies: readonly RolloutCopy[]): Promise<Array<{ name: string; status: string }>> {
    const unhealthy: Array<{ name: string; status: string }> = [];
    for (const copy of copies) {
      const facts = await this.#facts(subject, copy);
      if (!facts.gone && facts.status !== 'healthy') unhealthy.push({ name: `${copy.cluster}/${copy.service}`, status: facts.status });
    }
    return unhealthy;
  }

  /** The services `selects` as the plan sees them, with who else pinned them (the subject's own pin is no bar). */
  async #copiesOf(subject: RolloutSubject, selects: (service: Service) => boolean): Promise<PlannedCluster[]> {
    const [clusters, services] = await Promise.all([listClusters(this.#deps.db), listServices(this.#deps.db)]);
    const byId = new Map(clusters.map((cluster) => [cluster.id, cluster]));
    const pin = rolloutPin(subject.name);
    return services.flatMap((service) => {
      const cluster = byId.get(service.clusterId);
      if (!selects(service) || service.deletedAt !== null || !cluster) return [];
      return [
        {
          serviceId: service.id,
          clusterId: cluster.id,
          cluster: cluster.name,
          tags: cluster.tags,
          service: service.name,
          revision: service.revision.number,
          pinnedBy: service.pinned && service.pinned.by !== pin ? service.pinned.by : null,
        },
      ];
    });
  }

  /** The rollout's subject, read from its owner; undefined when the owner is gone. */
  async #subjectOf(rollout: Rollout): Promise<RolloutSubject | undefined> {
    const { owner } = rollout;
    if ('globalServiceId' in owner) {
      const global = await globalServiceById(this.#deps.db, this.#deps.box, owner.globalServiceId);
      return global && globalServiceSubject(global);
    }
    if ('agentVersion' in owner) return agentsSubject(owner.agentVersion);
    const pipeline = (await listPipelines(this.#deps.db)).find((candidate) => candidate.id === owner.pipelineId);
    return pipeline && stageSubject(pipeline, owner.stage);
  }

  /** Tells the UI of a written change, and the notification routers of a step (`before` undefined: it started). */
  #announce(subject: RolloutSubject, before: Rollout | undefined, after: Rollout): void {
    this.#deps.onRolloutChange(subject, after);
    const news = rolloutNews(before, after);
    if (!news) return;
    const wave = waveNames(after.spec, after.copies)[after.wave] ?? null;
    this.#deps.notifier.notify({
      type: 'rollout.update',
      severity: news.severity,
      rollout: { id: after.id, subject: subject.path, state: after.state, wave },
      message: `rollout of ${subject.name} (${after.cause}) ${news.message}`,
    });
  }

  #arm(subject: RolloutSubject, rollout: Rollout, at: Date): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(rollout.id);
        void currentRollout(this.#deps.db, subject.owner)
          .then(async (current) => {
            if (current?.id === rollout.id) await this.#evaluate(subject, current);
          })
          .catch((error: unknown) => this.#deps.log.warn({ rollout: subject.name, error: messageOf(error) }, 'rollout evaluation failed'));
      },
      Math.min(Math.max(at.getTime() - this.#now().getTime(), 0), MAX_TIMER_MS),
    );
    timer.unref();
    this.#timers.set(rollout.id, timer);
  }
}

/** The rollout after a failure: PAUSED where it is, or FAILED with every copy it changed marked for a rollback. */
function failed(rollout: Rollout, copy: RolloutCopy | undefined, reason: string, now: Date): Rollout {
  const where = copy ? `${copy.cluster}/${copy.service} (wave ${waveNames(rollout.spec, rollout.copies)[copy.wave]}): ` : '';
  const message = `${where}${reason}`;
  const copies = rollout.copies.map((candidate) =>
    candidate.serviceId === copy?.serviceId ? { ...candidate, state: 'FAILED' as const, reason } : candidate,
  );
  if (rollout.spec.onFailure === 'pause')
    return { ...rollout, copies, state: 'PAUSED', reason: `paused at ${now.toISOString()}: ${message}` };
  return { ...rollout, copies: copies.map(rolledBack), state: 'FAILED', reason: `${message}; the changed clusters were rolled back` };
}

/** A copy the rollout changed, marked to go back to the revision it ran (done by #finishPending). */
function rolledBack(copy: RolloutCopy): RolloutCopy {
  return copy.state === 'RELEASED' || copy.state === 'HEALTHY' || copy.state === 'FAILED'
    ? { ...copy, state: 'ROLLED_BACK', rollbackPending: true }
    : copy;
}

/** The rollout after a user's action, or why it does not apply. */
function actedOn(rollout: Rollout, action: RolloutAction, by: string, now: Date): Rollout | string {
  const time = now.toISOString();
  switch (action) {
    case 'pause':
      return rollout.state === 'RUNNING'
        ? { ...rollout, state: 'PAUSED', reason: `paused by ${by} at ${time}` }
        : `the rollout is ${rollout.state}, not RUNNING`;
    case 'resume':
      if (rollout.state !== 'PAUSED') return `the rollout is ${rollout.state}, not PAUSED`;
      return {
        ...rollout,
        state: 'RUNNING',
        reason: null,
        soakingSince: null,
        copies: rollout.copies.map((copy) =>
          copy.state === 'FAILED' ? { ...copy, state: 'RELEASED' as const, reason: null, releasedAt: time } : copy,
        ),
      };
    case 'abort':
      if (rollout.state !== 'RUNNING' && rollout.state !== 'PAUSED') return `the rollout is ${rollout.state}: nothing to abort`;
      return { ...rollout, state: 'ABORTED', reason: `aborted by ${by} at ${time}`, copies: rollout.copies.map(rolledBack) };
  }
}

/** What a notification says of the change from `before` to `after`: a new state, or a wave done; nothing else. */
function rolloutNews(before: Rollout | undefined, after: Rollout): Pick<FleetEvent, 'message' | 'severity'> | undefined {
  const waves = waveNames(after.spec, after.copies);
  const count = `${waves.length} wave${waves.length === 1 ? '' : 's'}`;
  if (!before) return { severity: 'info', message: `started: ${count}, ${after.copies.length} cluster(s)` };
  if (after.state !== before.state) {
    const severity = after.state === 'FAILED' || (after.state === 'PAUSED' && after.copies.some((copy) => copy.state === 'FAILED'));
    const message =
      after.state === 'RUNNING' ? 'resumed' : after.state === 'DONE' ? `done: ${count}` : `${after.state}: ${after.reason ?? ''}`.trim();
    return { severity: severity ? 'error' : 'info', message };
  }
  if (after.wave > before.wave) return { severity: 'info', message: `wave ${waves[before.wave]} done; wave ${waves[after.wave]} starts` };
  return undefined;
}

function earlier(a: Date | undefined, b: Date): Date {
  return a && a < b ? a : b;
}

/** Why the rollout has not finished: one line per blocker (nothing once DONE). */
function rolloutWaits(rollout: Rollout): string[] {
  const waves = waveNames(rollout.spec, rollout.copies);
  if (rollout.state === 'DONE' || rollout.state === 'SUPERSEDED') return [];
  if (rollout.state !== 'RUNNING') return [`${rollout.state}: ${rollout.reason ?? ''}`.trim()];
  const wave = waves[rollout.wave] ?? '';
  const lines = rollout.copies
    .filter((copy) => copy.wave === rollout.wave && copy.state === 'RELEASED')
    .map((copy) => `wave ${wave}: ${copy.cluster}/${copy.service} released at ${copy.releasedAt}, not healthy yet`);
  if (lines.length === 0 && rollout.soakingSince) lines.push(`wave ${wave}: soaking ${rollout.spec.soak} since ${rollout.soakingSince}`);
  const later = rollout.copies.filter((copy) => copy.wave > rollout.wave && copy.state === 'WAITING');
  if (later.length > 0) lines.push(`${later.length} cluster(s) of later waves wait for wave ${wave}`);
  const batches = rollout.copies.filter((copy) => copy.wave === rollout.wave && copy.state === 'WAITING').length;
  if (batches > 0) lines.push(`wave ${wave}: ${batches} cluster(s) wait for the batch before them`);
  return lines;
}
