/**
 * Hooks, as kluctl's hooks docs define them: objects annotated `kluctl.io/hook` (or Helm's `helm.sh/hook`, mapped
 * to Kluctl's names) are not applied with the other objects of their item but before or after them, ordered by
 * `kluctl.io/hook-weight` (or `helm.sh/hook-weight`), deleted before re-creation or after success/failure as
 * `kluctl.io/hook-delete-policy` (or Helm's) says, and waited for unless `kluctl.io/hook-wait: "false"`.
 * "Initial" hooks run when none of the item's objects existed before the deploy.
 */
import type { KubeObject } from '../kube/object.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';

export type HookPhase = 'pre-deploy' | 'post-deploy' | 'pre-delete' | 'post-delete';

export interface Hook {
  object: KubeObject;
  /** Kluctl hook names the object runs at. */
  names: Set<string>;
  weight: number;
  deletePolicies: Set<string>;
  wait: boolean;
}

const KLUCTL_HOOKS = [
  'pre-deploy',
  'post-deploy',
  'pre-deploy-initial',
  'post-deploy-initial',
  'pre-deploy-upgrade',
  'post-deploy-upgrade',
  'pre-delete',
  'post-delete',
];
const DELETE_POLICIES = ['before-hook-creation', 'hook-succeeded', 'hook-failed'];
/**
 * Helm hook names and the Kluctl hooks they run as (Kluctl's helmCompatibility mapping). Delete and rollback hooks
 * keep their names: no deploy runs them, so such objects are never applied, as in Kluctl. Helm's test hooks never
 * get here (`helm template --skip-tests`); other Helm hook names make no hook, and the object is applied as is.
 */
const HELM_HOOKS: Record<string, string> = {
  'pre-install': 'pre-deploy-initial',
  'post-install': 'post-deploy-initial',
  'pre-upgrade': 'pre-deploy-upgrade',
  'post-upgrade': 'post-deploy-upgrade',
  'pre-delete': 'pre-delete',
  'post-delete': 'post-delete',
  'pre-rollback': 'pre-rollback',
  'post-rollback': 'post-rollback',
};

/**
 * The hook an object is, or undefined for an ordinary object.
 * @throws Error naming the annotation for unknown hook names, delete policies or weights.
 */
export function hookOf(object: KubeObject): Hook | undefined {
  if (isTrueAnnotation(object, 'kluctl.io/delete')) return undefined;
  const annotations = object.metadata.annotations ?? {};
  const names = listAnnotation(annotations['kluctl.io/hook']);
  for (const name of names) if (!KLUCTL_HOOKS.includes(name)) throw new Error(`unsupported kluctl.io/hook '${name}'`);
  for (const name of listAnnotation(annotations['helm.sh/hook'])) {
    const mapped = HELM_HOOKS[name];
    if (mapped) names.add(mapped);
  }
  if (names.size === 0) return undefined;
  const weightText = annotations['kluctl.io/hook-weight'] ?? annotations['helm.sh/hook-weight'] ?? '0';
  const weight = Number(weightText);
  if (!Number.isInteger(weight)) throw new Error(`hook weight '${weightText}' is not an integer`);
  const deletePolicies = new Set([
    ...listAnnotation(annotations['kluctl.io/hook-delete-policy']),
    ...listAnnotation(annotations['helm.sh/hook-delete-policy']),
  ]);
  if (deletePolicies.size === 0) deletePolicies.add('before-hook-creation');
  for (const policy of deletePolicies)
    if (!DELETE_POLICIES.includes(policy)) throw new Error(`unsupported kluctl.io/hook-delete-policy '${policy}'`);
  return { object, names, weight, deletePolicies, wait: annotations['kluctl.io/hook-wait'] !== 'false' };
}

/** hookOf for places that only need to know whether an object is a hook; invalid hook annotations count as none. */
export function tryHookOf(object: KubeObject): Hook | undefined {
  try {
    return hookOf(object);
  } catch {
    return undefined;
  }
}

/**
 * The hooks of `phase`, in execution order (weight, then listed order); deploy phases also take the `-initial` or
 * `-upgrade` variant, by whether this is the item's first deploy.
 */
export function hooksFor(hooks: readonly Hook[], phase: HookPhase, initial: boolean): Hook[] {
  const names = phase.endsWith('-delete') ? [phase] : [phase, `${phase}-${initial ? 'initial' : 'upgrade'}`];
  return hooks
    .map((hook, index) => ({ hook, index }))
    .filter(({ hook }) => names.some((name) => hook.names.has(name)))
    .sort((a, b) => a.hook.weight - b.hook.weight || a.index - b.index)
    .map(({ hook }) => hook);
}

function listAnnotation(value: string | undefined): Set<string> {
  return new Set(
    (value ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  );
}
