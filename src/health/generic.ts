import type { KubeObject } from '../kube/object.ts';
import { conditionOf, describeCondition, integerAt, statusOf, type Condition } from './fields.ts';
import { failed, inProgress, ready, type Readiness } from './types.ts';

/**
 * Readiness of an object of a kind without rules of its own (custom resources above all), by the conventions kstatus
 * reads from any object:
 * - no status: Ready, nothing reports work in progress (Kluctl also waits up to 15s for a status when the CRD
 *   declares one, which needs the cluster, not just the object);
 * - status.observedGeneration (when present) below metadata.generation: InProgress, the controller has not yet
 *   seen the latest spec;
 * - Stalled True: Failed (kstatus: the controller gave up and needs a spec change);
 * - Reconciling True: InProgress;
 * - Ready True: Ready; Ready False or Unknown: InProgress, quoting its reason and message (kstatus does not treat
 *   a Ready=False reason such as "ReconciliationFailed" as final either: controllers retry, and mark what is final
 *   with Stalled);
 * - none of these conditions: Ready.
 * The deciding condition must describe the current generation: when it records an older observedGeneration (as
 * metav1.Condition allows) the controller has not caught up, and the object is InProgress.
 */
export function genericReadiness(object: KubeObject): Readiness {
  const status = statusOf(object);
  if (status === undefined) return ready();

  const generation = object.metadata.generation;
  const observed = integerAt(status, 'observedGeneration');
  if (generation !== undefined && observed !== undefined && observed < generation) {
    return inProgress(`waiting for the controller to observe generation ${generation} (last observed ${observed})`);
  }

  const deciding = decidingCondition(object);
  if (deciding === undefined) return ready();
  const decidedFor = deciding.observedGeneration;
  if (generation !== undefined && decidedFor !== undefined && decidedFor < generation) {
    const why = `${deciding.type} is from generation ${decidedFor}`;
    return inProgress(`waiting for the controller to observe generation ${generation} (${why})`);
  }
  switch (deciding.type) {
    case 'Stalled':
      return failed(`Stalled: ${describeCondition(deciding)}`);
    case 'Reconciling':
      return inProgress(`Reconciling: ${describeCondition(deciding)}`);
    default:
      return deciding.status === 'True'
        ? ready(describeCondition(deciding))
        : inProgress(`not ready: ${describeCondition(deciding) || deciding.status}`);
  }
}

/**
 * The condition that decides, most telling first: Stalled=True, then Reconciling=True (both "abnormal-true", so
 * False says nothing), then Ready whatever its status. kstatus takes whichever of Stalled and Reconciling comes first
 * in the list; putting Stalled first makes the answer independent of the order.
 */
function decidingCondition(object: KubeObject): Condition | undefined {
  const stalled = conditionOf(object, 'Stalled');
  if (stalled?.status === 'True') return stalled;
  const reconciling = conditionOf(object, 'Reconciling');
  if (reconciling?.status === 'True') return reconciling;
  return conditionOf(object, 'Ready');
}
