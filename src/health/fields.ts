/**
 * Reading an object's fields as the API server returned them. Objects are plain JSON of unknown shape, so every
 * reader checks the type it expects and answers `undefined` (or an empty list) for anything else: a malformed or
 * hand-written object then reads as "not there yet" instead of throwing in the middle of a wait.
 */
import type { KubeObject } from '../kube/object.ts';
import { inProgress, type Readiness } from './types.ts';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at `path` below `value`, or undefined when a step is missing or not an object. */
export function fieldAt(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (!isRecord(current)) return undefined;
    current = current[key];
  }
  return current;
}

/** The integer at `path`; status counters the API server leaves out when they are zero read as undefined. */
export function integerAt(value: unknown, ...path: string[]): number | undefined {
  const field = fieldAt(value, ...path);
  return typeof field === 'number' && Number.isInteger(field) ? field : undefined;
}

export function stringAt(value: unknown, ...path: string[]): string | undefined {
  const field = fieldAt(value, ...path);
  return typeof field === 'string' ? field : undefined;
}

/** The list at `path`, or an empty list when there is none. */
export function listAt(value: unknown, ...path: string[]): unknown[] {
  const field = fieldAt(value, ...path);
  return Array.isArray(field) ? field : [];
}

/** The object's `status`, when it has one that is an object. */
export function statusOf(object: KubeObject): Record<string, unknown> | undefined {
  return isRecord(object.status) ? object.status : undefined;
}

/**
 * One entry of `status.conditions`, in the shape the Kubernetes API conventions give it (metav1.Condition and the
 * older per-kind condition types alike). `status` is "True", "False" or "Unknown".
 */
export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  /** The metadata.generation the condition was computed for, when the controller records it. */
  observedGeneration: number | undefined;
}

/** The entries of `status.conditions` that have a type; a missing reason or message reads as ''. */
export function conditionsOf(object: KubeObject): Condition[] {
  return listAt(object, 'status', 'conditions').flatMap((entry) => {
    const type = stringAt(entry, 'type');
    if (type === undefined) return [];
    return [
      {
        type,
        status: stringAt(entry, 'status') ?? 'Unknown',
        reason: stringAt(entry, 'reason') ?? '',
        message: stringAt(entry, 'message') ?? '',
        observedGeneration: integerAt(entry, 'observedGeneration'),
      },
    ];
  });
}

/** The condition of `type`; conditions are unique per type by API convention, so the first one is taken. */
export function conditionOf(object: KubeObject, type: string): Condition | undefined {
  return conditionsOf(object).find((condition) => condition.type === type);
}

/** `Reason: message`, or whichever of the two is set, for quoting a condition in a readiness message. */
export function describeCondition(condition: Condition): string {
  return [condition.reason, condition.message].filter((part) => part !== '').join(': ');
}

/**
 * For kinds whose controller always writes `status.observedGeneration` (Deployment, StatefulSet, DaemonSet,
 * ReplicaSet, Cluster API's Cluster): InProgress while the controller has not yet seen the latest spec, because until then the rest of the
 * status describes the previous spec. A missing observedGeneration means the controller has not seen the object at
 * all, as kubectl rollout status and kstatus read it. Undefined when the status is current.
 */
export function unobservedGeneration(object: KubeObject): Readiness | undefined {
  const generation = object.metadata.generation;
  if (generation === undefined) return undefined;
  const observed = integerAt(object, 'status', 'observedGeneration');
  if (observed !== undefined && observed >= generation) return undefined;
  const seen = observed === undefined ? 'none observed yet' : `last observed ${observed}`;
  return inProgress(`waiting for the controller to observe generation ${generation} (${seen})`);
}
