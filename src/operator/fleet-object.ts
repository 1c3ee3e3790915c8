/**
 * One reconcile of a fleet resource into the server, the same for every kind (Plural's operator: pluralsh/console
 * go/controller/internal/controller/*_controller.go). A kind says how to read its desired attributes, find, create,
 * update and delete its server object, and what of it to mirror into status; this module decides ownership:
 *
 * - The finalizer marks a resource whose server object the operator made: it is created when missing, updated when
 *   the sha of its attributes changed, and deleted (or detached) before the finalizer goes.
 * - A resource whose server object already existed when first seen is adopted read-only: Readonly=True (sticky),
 *   status mirrored, never updated or deleted; deleting the resource leaves the server object as it is.
 * - A reference that is not synced yet, or input the server refuses, is Synchronized=False with the reason; nothing
 *   is sent. The status is written once, at the end, and only when it changed.
 * - A field Gantry does not act on (the `unsupported` marks of src/api/fleet.ts) is named in Supported=False; one that
 *   would change what is deployed or where makes the resource Synchronized=False with reason UnsupportedField, and
 *   nothing is sent until it is removed.
 * - Plural's `bindings` of an owned resource become the server's role bindings on its server object (bindings.ts),
 *   deleted with it; an adopted resource's are named as not applied.
 * - A synced resource is reconciled again after its `reconciliation.interval` (jittered by ±50%, as Plural's Jitter),
 *   or the operator's status interval; never by the clock with `reconciliation.driftDetection: false` (Plural's
 *   reconciliation.go), only when it or a referent changes.
 */
import { createHash } from 'node:crypto';
import type { TSchema } from 'typebox';
import { ApiError, type FleetClient } from '../client/fleet-client.ts';
import { CONDITIONS, FLEET_FINALIZER, type FleetResource } from '../api/fleet.ts';
import type { Condition } from '../api/kluctl-deployment.ts';
import { withCondition } from '../kube/conditions.ts';
import type { ReconcileResult } from '../reconcile/manager.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import type { Logger } from '../logger.ts';
import { messageOf } from '../problems.ts';
import { parseDuration } from '../duration.ts';
import { describeFields, type UnsupportedField, unsupportedFields } from './unsupported-fields.ts';
import {
  type BindingTarget,
  bindingName,
  deleteBindings,
  type DesiredBindings,
  desiredBindings,
  type PluralBindings,
  syncBindings,
} from './bindings.ts';

/** A reference that does not resolve yet (missing, or not synced): the resource waits, watching the referent. */
export class Waiting extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Waiting';
  }
}

/** Input no request can fix (a Secret without a needed key, a field combination): reported until the spec changes. */
export class InvalidSpec extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSpec';
  }
}

/** A field set that Gantry does not act on and that would change what is deployed or where. */
export class UnsupportedFieldSet extends Error {
  constructor(fields: readonly UnsupportedField[]) {
    super(`${describeFields(fields)}; nothing is sent until ${fields.length === 1 ? 'it is' : 'they are'} removed`);
    this.name = 'UnsupportedFieldSet';
  }
}

/** Plural's reconciliation settings of a resource (reconciliation.go). */
export interface ReconciliationSettings {
  driftDetection?: boolean | undefined;
  interval?: string | undefined;
}

/** Whether the server object is ready, and why not. */
export interface Readiness {
  ready: boolean;
  reason: string;
  message: string;
}

/** What the operator does for one kind; `D` is its desired state, `R` its server object. */
export interface FleetKind<Spec, Status, D extends { attributes: unknown }, R> {
  kind: string;
  /** The spec's schema, whose `unsupported` marks name the fields Gantry does not act on. */
  schema: TSchema;
  /**
   * When the operator looks at the resource again by the clock; default its `spec.reconciliation`. A kind whose
   * drift detection is its agent's (a service's objects) leaves the operator at its status interval.
   */
  reconciliation?(resource: FleetResource<Spec, Status>): ReconciliationSettings | undefined;
  /** Where Plural's `bindings` of the kind grant rights: the scope of its server object (bindings.ts). */
  bindings?(remote: R): BindingTarget;
  /** The desired state from the spec and its references. @throws Waiting, InvalidSpec */
  desired(resource: FleetResource<Spec, Status>): Promise<D>;
  /** The server object `desired` names, made by this resource or not. */
  find(desired: D): Promise<R | undefined>;
  create(desired: D, resource: FleetResource<Spec, Status>): Promise<R>;
  update(remote: R, desired: D): Promise<R>;
  /**
   * The server object of a resource being deleted (`desired` may be unreadable by then: the referents can go first).
   * @returns whether it is gone (false: asked, check again).
   */
  remove(resource: FleetResource<Spec, Status>): Promise<boolean>;
  id(remote: R): string;
  /** Status fields mirrored from the server object, and its readiness. */
  observe(remote: R): { status: Partial<Status>; readiness: Readiness };
}

export interface FleetReconcileDeps {
  /** The management cluster, for finalizers and status. */
  cluster: Cluster;
  client: FleetClient;
  fieldManager: string;
  resource: { group: string; version: string; kind: string };
  log: Logger;
  /** How often a synced resource's status is read again from the server, in ms. */
  statusIntervalMs: number;
}

type AnyStatus = { id?: string; sha?: string; readonly?: boolean; conditions?: Condition[] };

/** The resource's attributes as the server last got them: sha256 over their JSON. */
export function attributesSha(attributes: unknown): string {
  return createHash('sha256').update(JSON.stringify(attributes)).digest('hex');
}

export async function reconcileFleetObject<Spec, Status extends AnyStatus, D extends { attributes: unknown }, R>(
  kind: FleetKind<Spec, Status, D, R>,
  object: KubeObject,
  deps: FleetReconcileDeps,
): Promise<ReconcileResult> {
  const resource = object as unknown as FleetResource<Spec, Status>;
  const status: Status = structuredClone(resource.status ?? ({} as Status));
  const generation = resource.metadata.generation;
  const condition = (type: string, ok: boolean, reason: string, message: string) => {
    status.conditions = withCondition(status.conditions, {
      type,
      status: ok ? 'True' : 'False',
      reason,
      message,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    });
  };
  const owned = (resource.metadata.finalizers ?? []).includes(FLEET_FINALIZER);
  const readonly = status.conditions?.some((c) => c.type === CONDITIONS.readonly && c.status === 'True') ?? false;

  const bindingNames = (access: 'read' | 'write') =>
    bindingName(kind.kind, resource.metadata.namespace ?? '', resource.metadata.name, access);

  if (resource.metadata.deletionTimestamp) {
    if (!owned) return {};
    if (kind.bindings) await deleteBindings(deps.client, bindingNames);
    if (!(await kind.remove(resource))) return { requeueAfterMs: Math.min(deps.statusIntervalMs, 2_000) };
    await removeFinalizer(resource, deps);
    return {};
  }

  // Named in the Supported condition once the reconcile knows all of them (bindings of an adopted resource too).
  const unsupported = unsupportedFields(kind.schema, resource.spec);
  const bindings = kind.bindings ? desiredBindings((resource.spec as { bindings?: PluralBindings }).bindings) : undefined;
  unsupported.push(...(bindings?.unmapped ?? []));

  let result: ReconcileResult = requeueOf(kind, resource, deps.statusIntervalMs);
  try {
    const blocking = unsupported.filter((field) => field.blocks);
    if (blocking.length > 0) throw new UnsupportedFieldSet(blocking);
    const desired = await kind.desired(resource);
    let remote = await kind.find(desired);
    const adopt = !owned && (readonly || remote !== undefined);
    if (adopt) {
      status.readonly = true;
      condition(CONDITIONS.readonly, true, 'Adopted', `${kind.kind} exists in the server and was not made by this resource: read-only`);
      if (!remote) throw new Waiting(`the adopted ${kind.kind.toLowerCase()} ${status.id ?? ''} is gone from the server`);
      condition(CONDITIONS.synchronized, true, 'ReadOnly', 'mirrored from the server, never changed');
      if (bindings && hasSubjects(bindings)) {
        unsupported.push({
          path: 'spec.bindings',
          reason: 'not applied: the server object is adopted, not made by this resource',
          blocks: false,
        });
      }
    } else {
      if (!owned) await addFinalizer(resource, deps);
      condition(CONDITIONS.readonly, false, 'Owned', 'made and kept by this resource');
      status.readonly = false;
      // The bindings are part of what is sent: a change of them alone syncs again (none: the sha of before bindings).
      const bound = bindings && hasSubjects(bindings) ? { attributes: desired.attributes, bindings: bindings.subjects } : undefined;
      const sha = attributesSha(bound ?? desired.attributes);
      if (!remote) remote = await kind.create(desired, resource);
      else if (status.sha !== sha) remote = await kind.update(remote, desired);
      if (bindings && kind.bindings && status.sha !== sha) await syncBindings(deps.client, bindingNames, bindings, kind.bindings(remote));
      status.sha = sha;
      condition(CONDITIONS.synchronized, true, 'Synchronized', 'the server has this spec');
    }
    status.id = kind.id(remote);
    const observed = kind.observe(remote);
    Object.assign(status, observed.status);
    const { readiness } = observed;
    condition(CONDITIONS.ready, readiness.ready, readiness.reason, readiness.message);
  } catch (error) {
    const [reason, message] = failureOf(error);
    condition(CONDITIONS.synchronized, false, reason, message);
    condition(CONDITIONS.ready, false, reason, message);
    if (reason === 'Error') result = { requeueAfterMs: deps.statusIntervalMs, error };
    else if (reason === 'Waiting') result = { requeueAfterMs: deps.statusIntervalMs };
    else result = {};
  }
  if (unsupported.length === 0) condition(CONDITIONS.supported, true, 'AllFieldsSupported', 'Gantry acts on every field of the spec');
  else condition(CONDITIONS.supported, false, 'UnsupportedFields', `not acted on: ${describeFields(unsupported)}`);
  if (JSON.stringify(status) !== JSON.stringify(resource.status ?? {})) await writeStatus(resource, status, deps);
  return result;
}

function hasSubjects(bindings: DesiredBindings): boolean {
  return bindings.subjects.read.length + bindings.subjects.write.length > 0;
}

/** The condition reason and message of a failed reconcile. */
function failureOf(error: unknown): [string, string] {
  if (error instanceof Waiting) return ['Waiting', error.message];
  if (error instanceof InvalidSpec) return ['InvalidSpec', error.message];
  if (error instanceof UnsupportedFieldSet) return ['UnsupportedField', error.message];
  if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 403) {
    return ['Refused', `the server refused it: ${error.message}${error.field ? ` (${error.field})` : ''}`];
  }
  return ['Error', messageOf(error)];
}

/**
 * The next look by the clock at a synced resource: its reconciliation interval, jittered to 50–150% so resources made
 * together do not come back together (Plural's Jitter); none with drift detection off; else `defaultMs`.
 */
function requeueOf<Spec, Status>(
  kind: Pick<FleetKind<Spec, Status, { attributes: unknown }, unknown>, 'reconciliation'>,
  resource: FleetResource<Spec, Status>,
  defaultMs: number,
): ReconcileResult {
  const settings = kind.reconciliation
    ? kind.reconciliation(resource)
    : (resource.spec as { reconciliation?: ReconciliationSettings } | undefined)?.reconciliation;
  if (settings?.driftDetection === false) return {};
  if (!settings?.interval) return { requeueAfterMs: defaultMs };
  const intervalMs = parseDuration(settings.interval);
  return { requeueAfterMs: Math.max(1_000, Math.round(intervalMs / 2 + Math.random() * intervalMs)) };
}

async function addFinalizer(resource: FleetResource<unknown, unknown>, deps: FleetReconcileDeps): Promise<void> {
  await deps.cluster.patchMerge(
    refOf(resource, deps),
    {
      metadata: {
        resourceVersion: resource.metadata.resourceVersion,
        finalizers: [...(resource.metadata.finalizers ?? []), FLEET_FINALIZER],
      },
    },
    { fieldManager: deps.fieldManager },
  );
}

async function removeFinalizer(resource: FleetResource<unknown, unknown>, deps: FleetReconcileDeps): Promise<void> {
  const finalizers = (resource.metadata.finalizers ?? []).filter((entry) => entry !== FLEET_FINALIZER);
  await deps.cluster.patchMerge(
    refOf(resource, deps),
    { metadata: { resourceVersion: resource.metadata.resourceVersion, finalizers } },
    { fieldManager: deps.fieldManager },
  );
}

async function writeStatus(resource: FleetResource<unknown, unknown>, status: unknown, deps: FleetReconcileDeps): Promise<void> {
  await deps.cluster
    .patchJson(refOf(resource, deps), [{ op: 'add', path: '/status', value: status }], {
      fieldManager: deps.fieldManager,
      subresource: 'status',
    })
    .catch((error: unknown) => {
      // Gone meanwhile (deleted, or its finalizer just removed): nothing to report on.
      if ((error as { status?: number }).status !== 404) throw error;
    });
}

function refOf(resource: FleetResource<unknown, unknown>, deps: FleetReconcileDeps) {
  return { ...deps.resource, namespace: resource.metadata.namespace ?? '', name: resource.metadata.name };
}
