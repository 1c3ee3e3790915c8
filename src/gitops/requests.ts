/**
 * The client side of the controller's manual request protocol, as kluctl's gitops commands speak it
 * (cmd/kluctl/commands/cmd_gitops.go): a request is the annotation `kluctl.io/request-<kind>` holding
 * `{"requestValue": "<unique>", "overridesPatch": <merge patch of the spec>}`; the controller answers in
 * `status.<kind>RequestResult` = {request, startTime, endTime, reconcileId, resultId, commandError}, where the
 * request echoes the annotation (so its requestValue tells whose request it answers) and resultId names the stored
 * command result. Suspending and resuming change spec.suspend and wait until the controller observed the change.
 * Any controller of gitops.gantry.dev KluctlDeployments that follows this protocol can be driven.
 */
import {
  GROUP,
  KIND,
  REQUEST_ANNOTATIONS,
  VERSION,
  type KluctlDeployment,
  type ManualRequest,
  type ManualRequestResult,
  type RequestKind,
} from '../api/kluctl-deployment.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { ObjectRef } from '../kube/object.ts';
import type { Progress } from '../progress.ts';

/** The field manager of the CLI's patches, so managedFields tell who requested what. */
export const GITOPS_FIELD_MANAGER = 'gantry-gitops';

const DEFAULT_POLL_MS = 1000;

/** Which KluctlDeployments a command is for: one by name, or all matching a label selector in a namespace. */
export interface Selection {
  /** The kubeconfig context's namespace (else `default`) when unset. */
  namespace?: string;
  name?: string;
  labelSelector?: string;
  /** Every KluctlDeployment of the namespace (kluctl's --all of suspend and resume). */
  all?: boolean;
}

export interface WaitOptions {
  timeoutMs: number;
  progress: Progress;
  /** How often the object is read while waiting; 1s when unset. */
  pollMs?: number;
}

export interface RequestWaitOptions extends WaitOptions {
  /** Called once, when the controller took the request up (its result names the reconcile). */
  onStarted?: (result: ManualRequestResult) => void;
  /** Whether to report each new message of the Reconciling condition (default: yes); not when the controller's log is shown instead. */
  conditionMessages?: () => boolean;
}

/**
 * The selected KluctlDeployments, sorted by name.
 * @throws Error when the CRD is not served, the named deployment does not exist, nothing matches the selector,
 *   or the selection is missing or ambiguous.
 */
export async function selectDeployments(cluster: Cluster, selection: Selection): Promise<KluctlDeployment[]> {
  const ways = [selection.name, selection.labelSelector, selection.all].filter(Boolean).length;
  if (ways > 1) throw new Error('pass only one of --name, -l/--label-selector and --all');
  if (ways === 0) throw new Error('pass --name (with -n/--namespace) or -l/--label-selector to select KluctlDeployments');
  const namespace = selection.namespace ?? contextNamespace(cluster);
  // First, so a cluster without the CRD gets that said, where a get would only find nothing.
  const resource = await cluster.resourceFor({ group: GROUP, version: VERSION, kind: KIND });
  if (selection.name) {
    const found = await cluster.get({ group: GROUP, version: VERSION, kind: KIND, namespace, name: selection.name });
    if (!found) throw new Error(`KluctlDeployment ${namespace}/${selection.name} not found`);
    return [found as unknown as KluctlDeployment];
  }
  const listed = (await cluster.list(resource, selection.labelSelector ?? '', namespace)) as unknown as KluctlDeployment[];
  if (listed.length === 0)
    throw new Error(
      `no KluctlDeployment in namespace ${namespace}${selection.labelSelector ? ` matches the label selector '${selection.labelSelector}'` : ''}`,
    );
  return listed.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/**
 * Sets the `kind` request annotation on the deployment and waits until the controller finished that request,
 * reporting on `progress` when it starts and each new message of the Reconciling condition.
 * @returns the controller's result for exactly this request.
 * @throws Error when the wait times out, the deployment is deleted, or another request replaced this one before
 *   the controller took it up.
 */
export async function requestAndWait(
  cluster: Cluster,
  deployment: KluctlDeployment,
  kind: RequestKind,
  overridesPatch: Record<string, unknown> | undefined,
  options: RequestWaitOptions,
): Promise<ManualRequestResult> {
  const key = deploymentKey(deployment);
  const request: ManualRequest = { requestValue: new Date().toISOString(), ...(overridesPatch ? { overridesPatch } : {}) };
  const annotation = REQUEST_ANNOTATIONS[kind];
  await mergePatch(cluster, deployment, { metadata: { annotations: { [annotation]: JSON.stringify(request) } } });
  options.progress.step(key, `requested ${kind}, waiting for the controller…`);
  let started = false;
  let lastMessage = '';
  return pollUntil(cluster, deployment, options, `the controller to finish the ${kind} request`, (current) => {
    const result = current.status?.[`${kind}RequestResult`];
    const answersUs = result?.request.requestValue === request.requestValue;
    if (answersUs && !started) {
      started = true;
      options.progress.step(key, `the controller started the ${kind} request (reconcile ${result.reconcileId})`);
      options.onStarted?.(result);
    }
    if (answersUs && result.endTime) return result;
    if (!answersUs && replacedBy(current.metadata.annotations?.[annotation], request.requestValue)) {
      throw new Error(`${key}: another ${kind} request replaced this one before the controller took it up`);
    }
    const message = current.status?.conditions?.find((condition) => condition.type === 'Reconciling')?.message ?? '';
    if (message !== '' && message !== lastMessage && (options.conditionMessages?.() ?? true)) options.progress.step(key, message);
    lastMessage = message;
    return undefined;
  });
}

/**
 * Sets spec.suspend and waits until the controller observed that generation (status.observedGeneration), so a
 * reconciliation that was running when the command started has finished, as kluctl's suspend waits.
 * @throws Error when the wait times out or the deployment is deleted.
 */
export async function setSuspended(cluster: Cluster, deployment: KluctlDeployment, suspend: boolean, options: WaitOptions): Promise<void> {
  const patched = await mergePatch(cluster, deployment, { spec: { suspend } });
  const generation = patched.metadata.generation ?? 0;
  options.progress.step(
    deploymentKey(deployment),
    `spec.suspend is ${suspend}, waiting for the controller to observe generation ${generation}…`,
  );
  await pollUntil(cluster, deployment, options, `the controller to observe generation ${generation}`, (current) =>
    (current.status?.observedGeneration ?? 0) >= generation ? true : undefined,
  );
}

/** `namespace/name`, how progress and errors name a deployment. */
export function deploymentKey(deployment: Pick<KluctlDeployment, 'metadata'>): string {
  return `${deployment.metadata.namespace}/${deployment.metadata.name}`;
}

/** Whether the request annotation now holds a request other than ours (a value that is no request counts too). */
function replacedBy(annotationValue: string | undefined, requestValue: string): boolean {
  if (annotationValue === undefined) return false;
  try {
    return (JSON.parse(annotationValue) as Partial<ManualRequest>).requestValue !== requestValue;
  } catch {
    return true;
  }
}

/** Reads the deployment until `check` returns a value, the deployment is gone, or the time is up. */
async function pollUntil<T>(
  cluster: Cluster,
  deployment: KluctlDeployment,
  options: WaitOptions,
  waitingFor: string,
  check: (current: KluctlDeployment) => T | undefined,
): Promise<T> {
  const key = deploymentKey(deployment);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const current = (await cluster.get(refOf(deployment))) as unknown as KluctlDeployment | undefined;
    if (!current) throw new Error(`${key}: the KluctlDeployment was deleted while waiting for ${waitingFor}`);
    const done = check(current);
    if (done !== undefined) return done;
    if (Date.now() >= deadline)
      throw new Error(
        `${key}: timed out after ${formatMs(options.timeoutMs)} waiting for ${waitingFor} (is the Gantry controller running?)`,
      );
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs ?? DEFAULT_POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}

/** A JSON merge patch (RFC 7386) of the deployment, as kluctl's CLI patches it. */
async function mergePatch(cluster: Cluster, deployment: KluctlDeployment, patch: Record<string, unknown>): Promise<KluctlDeployment> {
  const patched = await cluster.patchMerge(refOf(deployment), patch, { fieldManager: GITOPS_FIELD_MANAGER });
  return patched as unknown as KluctlDeployment;
}

function refOf(deployment: KluctlDeployment): ObjectRef {
  return { group: GROUP, version: VERSION, kind: KIND, namespace: deployment.metadata.namespace, name: deployment.metadata.name };
}

/** The namespace of the kubeconfig's current context, `default` when it names none (as kubectl). */
function contextNamespace(cluster: Cluster): string {
  return cluster.client.config.getContextObject(cluster.context)?.namespace || 'default';
}

function formatMs(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`;
}
