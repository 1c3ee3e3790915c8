/**
 * Manual requests, Kluctl's protocol (api/v1beta1/manual_requests.go): an annotation `kluctl.io/request-<kind>`
 * whose value is the JSON `{"requestValue": "...", "overridesPatch": {...}}` asks the controller to run that
 * command once, with the spec changed by the JSON merge patch (RFC 7386) for this run only; the controller answers
 * in `status.<kind>RequestResult`. Any other value (`kubectl annotate … kluctl.io/request-reconcile=$(date +%s)`, as
 * Flux users request reconciles) is a request without overrides whose requestValue is that value.
 */
import { Value } from 'typebox/value';
import {
  KluctlDeploymentSpecSchema,
  REQUEST_ANNOTATIONS,
  type KluctlDeployment,
  type KluctlDeploymentSpec,
  type ManualRequest,
  type RequestKind,
} from '../../api/kluctl-deployment.ts';
import { isPlainObject } from '../../values.ts';

export interface PendingRequest {
  kind: RequestKind;
  annotation: string;
  /** The annotation's value, as the request result echoes it. */
  value: string;
  request: ManualRequest;
}

/** The order Kluctl's controller serves requests in: one per reconcile, the full reconcile last. */
const ORDER: RequestKind[] = ['diff', 'deploy', 'prune', 'validate', 'reconcile'];

/** The requests annotated on `deployment`, in serving order. */
export function pendingRequests(deployment: KluctlDeployment): PendingRequest[] {
  const annotations = deployment.metadata.annotations ?? {};
  return ORDER.flatMap((kind) => {
    const annotation = REQUEST_ANNOTATIONS[kind];
    const value = annotations[annotation];
    return value ? [{ kind, annotation, value, request: parseRequest(value) }] : [];
  });
}

function parseRequest(value: string): ManualRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { requestValue: value };
  }
  if (isPlainObject(parsed) && typeof parsed['requestValue'] === 'string' && parsed['requestValue'] !== '') return parsed as ManualRequest;
  return { requestValue: value };
}

/** The spec with the request's overrides merged in (JSON merge patch). */
export function specWithOverrides(spec: KluctlDeploymentSpec, request: ManualRequest): KluctlDeploymentSpec {
  return request.overridesPatch === undefined ? spec : (mergePatch(spec, request.overridesPatch) as KluctlDeploymentSpec);
}

/** RFC 7386: objects merge recursively, null removes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** Problems of `spec` against the KluctlDeployment schema, each naming its field (`spec.interval: ...`). */
export function specProblems(spec: unknown): string[] {
  return [...Value.Errors(KluctlDeploymentSpecSchema, spec)].map(
    (error) => `spec${error.instancePath.replaceAll('/', '.')}: ${error.message}`,
  );
}

/**
 * The spec a request runs with: its overridesPatch merged in, then checked as the spec itself is, since the patch
 * comes from an annotation the API server never validated.
 * @throws Error naming each invalid field the patch made.
 */
export function overriddenSpec(spec: KluctlDeploymentSpec, request: ManualRequest): KluctlDeploymentSpec {
  const overridden = specWithOverrides(spec, request);
  const problems = specProblems(overridden);
  if (problems.length > 0) throw new Error(`the request's overridesPatch makes an invalid spec: ${problems.join('; ')}`);
  return overridden;
}
