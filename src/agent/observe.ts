/**
 * A service's components as the cluster has them now: each applied object's readiness and drift (drift.ts), read
 * from the agent's watched cache of the objects it labelled (Cluster.labelled), so that a look costs no request;
 * on a cluster without that cache, each object is fetched and only readiness is followed. The health and drift
 * loops both look through `refreshService`, which also plans the repair (repair.ts) and reports what changed.
 */
import type { AgentReport, AgentService } from '../api/agent.ts';
import { type KubeObject, refKey, refOf } from '../kube/object.ts';
import { AGENT_FIELD_MANAGER, type AgentState, type ServiceState } from './agent-state.ts';
import { driftOf, type Expected, expectationOf } from './drift.ts';
import { planRepair } from './repair.ts';
import { queueReport, sendPending } from './reports.ts';
import { serviceDiscriminator } from './service-project.ts';
import { componentHealthOf, refreshComponents, type SyncOutcome } from './sync.ts';

type Component = AgentReport['components'][number];

/**
 * What each object a sync applied without error should look like from now on, by refKey: its manifest and the live
 * object right after (the cache holds the API server's answers). Undefined without the watched cache or a manifest.
 */
export async function expectationsOf(
  state: AgentState,
  service: AgentService,
  outcome: SyncOutcome,
): Promise<Map<string, Expected> | undefined> {
  const labelled = state.cluster.labelled;
  if (!labelled || !outcome.manifests) return undefined;
  const live = byKey(await labelled.withValue(serviceDiscriminator(service)));
  const applied = new Set(outcome.components.filter((component) => component.synced).map((component) => refKey(component)));
  const expected = new Map<string, Expected>();
  for (const manifest of outcome.manifests) {
    const key = refKey(refOf(manifest));
    const object = live.get(key);
    if (object && applied.has(key)) expected.set(key, expectationOf(manifest, object, AGENT_FIELD_MANAGER));
  }
  return expected;
}

/**
 * Looks at the service's components again, plans a repair of their drift, and sends the report when it changed. A
 * repair due now wakes the poll, which syncs the service; one waiting for its backoff, or held repairs, are looked
 * at again when that ends (`state.driftChecks`, which the drift loop follows). Does nothing for a service without an
 * outcome, being deleted, or synced meanwhile (its look would be stale).
 */
export async function refreshService(state: AgentState, service: AgentService): Promise<void> {
  const serviceState = state.services.get(service.id);
  const outcome = serviceState?.outcome;
  if (!serviceState || !outcome || service.deleting || state.syncing === service.id) return;
  const observed = await observeComponents(state, service, serviceState, outcome);
  if (serviceState.outcome !== outcome || state.syncing === service.id) return;
  const now = Date.now();
  const plan = planRepair(service, serviceState, observed, now, state.options.repairBackoffMs);
  serviceState.outcome = { ...outcome, components: plan.components };
  queueReport(service, serviceState, serviceState.outcome);
  await sendPending(state, service);
  if (serviceState.repairAt !== undefined && serviceState.repairAt <= now) {
    state.log.info({ service: service.name, drifted: driftedNames(plan.components) }, 'repairing drift');
    state.driftChecks.delete(service.id);
    state.pollWakeup.wake();
  } else if (plan.nextCheckAt === undefined) {
    state.driftChecks.delete(service.id);
  } else if (state.driftChecks.get(service.id) !== plan.nextCheckAt) {
    state.driftChecks.set(service.id, plan.nextCheckAt);
    state.driftWakeup.wake();
  }
}

async function observeComponents(
  state: AgentState,
  service: AgentService,
  serviceState: ServiceState,
  outcome: SyncOutcome,
): Promise<Component[]> {
  const { labelled } = state.cluster;
  const { expected } = serviceState;
  if (!labelled || !expected) return await refreshComponents(state.cluster, outcome.components);
  const live = byKey(await labelled.withValue(serviceDiscriminator(service)));
  const normalizers = service.syncConfig?.diffNormalizers ?? [];
  return outcome.components.map(({ state: _state, message: _message, synced: _synced, drift: _drift, ...ref }) => {
    const object = live.get(refKey(ref));
    const wanted = expected.get(refKey(ref));
    const drift = wanted ? driftOf(wanted, object, normalizers, AGENT_FIELD_MANAGER) : undefined;
    return { ...ref, ...componentHealthOf(object), synced: wanted !== undefined && !drift, ...(drift ? { drift } : {}) };
  });
}

function byKey(objects: readonly KubeObject[]): Map<string, KubeObject> {
  return new Map(objects.map((object) => [refKey(refOf(object)), object]));
}

function driftedNames(components: readonly Component[]): string[] {
  return components.filter((component) => component.drift).map((component) => `${component.kind}/${component.name}`);
}
