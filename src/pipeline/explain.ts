/**
 * Why an edge has not promoted its source stage's current context yet, in words: one line per blocker, naming what
 * it waits for — the stage's services not healthy, a gate waiting for an approver, a Job running on a cluster, a
 * window closed until when, a soak until when, a gate closed and why — and, once promoted, a target a rollback
 * pinned, where the promotion waits for the pin's release. Argo CD and Plural show a gate's state; "why not
 * promoted yet" is the question their users ask.
 */
import { parseDuration } from '../duration.ts';

/** What the explanation reads of a gate's spec (the store's GateSpec has these and more). */
interface GateSpec {
  name: string;
  type: 'APPROVAL' | 'WINDOW' | 'JOB' | 'HEALTH';
  timeout?: string;
}

type GateState = 'PENDING' | 'OPEN' | 'CLOSED';

/** What the explanation reads of an edge, each as the API shows it. */
export interface EdgeFacts {
  from: string;
  /** The source stage's current context, if it has one. */
  context: { id: string; createdAt: string } | undefined;
  promoted: boolean;
  /** The source stage's services, with their status (`missing` for a deleted one). */
  sources: ReadonlyArray<{ cluster: string; name: string; status: string }>;
  gates: ReadonlyArray<{
    spec: GateSpec;
    state: GateState;
    contextId: string | null;
    reason: string | null;
    decidedBy: string | null;
    updatedAt: string;
    /** JOB gates: the Job the agent runs for this context, and the name of its cluster. */
    job?: { name: string; cluster: string };
  }>;
  /** The target stage's services a promotion moves, with the pin a rollback or a rollout set, if any. */
  targets: ReadonlyArray<{ cluster: string; name: string; pinnedBy: string | null; pendingRevision: number | null }>;
}

/** The blockers of the edge, in order: the stage, then each gate not open, then pinned targets; empty when none. */
export function waitingFor(facts: EdgeFacts): string[] {
  const pins = pinnedTargets(facts);
  if (!facts.context) return [noContext(facts), ...pins];
  if (facts.promoted) return pins;
  const gates = facts.gates.flatMap((gate) => {
    const state = gate.contextId === facts.context!.id ? gate.state : 'PENDING';
    return state === 'OPEN' ? [] : [gateLine(gate, state, facts)];
  });
  return [...(gates.length > 0 ? gates : ['every gate is open: promoting']), ...pins];
}

function noContext(facts: EdgeFacts): string {
  const unhealthy = facts.sources.filter((service) => service.status !== 'healthy');
  const which = unhealthy.map((service) => `${service.cluster}/${service.name} is ${service.status}`).join(', ');
  return `stage ${facts.from} has no promotion context yet: ${which || 'its services have not all been healthy at once'}`;
}

function gateLine(gate: EdgeFacts['gates'][number], state: GateState, facts: EdgeFacts): string {
  const { name, type } = gate.spec;
  if (state === 'CLOSED') {
    const by = gate.decidedBy ? ` by ${gate.decidedBy}` : '';
    return `${type} gate ${name} is closed${by}: ${gate.reason ?? 'no reason given'}; a new context of stage ${facts.from} or an admin's force opens it`;
  }
  const since = gate.contextId === facts.context!.id ? gate.updatedAt : facts.context!.createdAt;
  const waits = (() => {
    switch (type) {
      case 'APPROVAL':
        return `waits for an approver since ${since}`;
      case 'JOB':
        return gate.job ? `Job ${gate.job.name} on cluster ${gate.job.cluster} runs since ${since}` : `waits for its Job since ${since}`;
      case 'WINDOW':
      case 'HEALTH':
        return gate.reason ?? `not evaluated yet (since ${since})`;
    }
  })();
  return `${type} gate ${name}: ${waits}${timesOut(gate.spec, facts.context!.createdAt)}`;
}

function timesOut(spec: GateSpec, contextCreatedAt: string): string {
  if (!spec.timeout) return '';
  return `; times out at ${new Date(new Date(contextCreatedAt).getTime() + parseDuration(spec.timeout)).toISOString()}`;
}

function pinnedTargets(facts: EdgeFacts): string[] {
  return facts.targets
    .filter((target) => target.pinnedBy !== null)
    .map((target) => {
      const waiting = target.pendingRevision === null ? 'a promotion will wait' : `revision ${target.pendingRevision} waits`;
      // A rollout's pin (store/rollouts.ts's rolloutPin) holds a copy for its wave, or where a failed rollout left it.
      if (target.pinnedBy!.startsWith('rollout/'))
        return `${target.cluster}/${target.name} is held by ${target.pinnedBy}: ${waiting} for its wave, or, once that rollout failed, until it is released`;
      return `${target.cluster}/${target.name} is pinned by ${target.pinnedBy} (a rollback): ${waiting} until it is released`;
    });
}
