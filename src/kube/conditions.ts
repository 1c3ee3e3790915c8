/**
 * Kubernetes conditions (metav1.Condition) and their transition rule, shared by every kind Gantry writes a status
 * for: the KluctlDeployment controller's and the fleet operator's. Their CRD schemas declare the same shape
 * (src/api/kluctl-deployment.ts `Condition`).
 */

/** A metav1.Condition (k8s.io/apimachinery/pkg/apis/meta/v1, type Condition). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  /** The metadata.generation the condition was set for. */
  observedGeneration?: number | undefined;
  /** RFC 3339 time of the last change of `status`. */
  lastTransitionTime: string;
  /** CamelCase, machine-readable. */
  reason: string;
  message: string;
}

/**
 * Sets the condition of `next.type`, keeping its lastTransitionTime when the status did not change (metav1
 * conditions' rule: "the last time the condition transitioned from one status to another").
 * @returns a new list, the other conditions kept in order and this one last; `conditions` is not changed.
 */
export function withCondition(conditions: readonly Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>): Condition[] {
  const previous = (conditions ?? []).find((condition) => condition.type === next.type);
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : new Date().toISOString();
  return [...(conditions ?? []).filter((condition) => condition.type !== next.type), { ...next, lastTransitionTime }];
}
