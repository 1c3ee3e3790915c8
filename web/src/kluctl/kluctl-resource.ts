/**
 * The KluctlDeployment resource as the browser reaches it through the auth proxy: its API paths, and the shapes
 * of src/api/kluctl-deployment.ts (types only: that module's schemas are for Node). The names are restated here,
 * typed as the originals' literal types, so the compiler says when they part.
 */
import type {
  GROUP as ApiGroup,
  KluctlDeployment as ApiKluctlDeployment,
  PLURAL as ApiPlural,
  REQUEST_ANNOTATIONS as ApiRequestAnnotations,
  RequestKind,
  VERSION as ApiVersion,
} from '../../../src/api/kluctl-deployment.ts';
import type { DEFAULT_RESULTS_NAMESPACE as ApiResultsNamespace } from '../../../src/deploy/result-store.ts';
import type { KubeObject, ObjectMeta } from '../kube/kube-object.ts';

export type {
  DriftResult,
  ManualRequestResult,
  RequestKind,
  ResultSummary,
  KluctlDeploymentStatus,
} from '../../../src/api/kluctl-deployment.ts';
export type { StoredResult } from '../../../src/deploy/result-store.ts';
export type { ChangedObject, CommandResult, ResultMessage } from '../../../src/deploy/result.ts';
export type { ObjectRef } from '../../../src/kube/object.ts';

export const GROUP: typeof ApiGroup = 'gitops.gantry.dev';
export const VERSION: typeof ApiVersion = 'v1beta1';
export const PLURAL: typeof ApiPlural = 'kluctldeployments';
export const REQUEST_ANNOTATIONS: typeof ApiRequestAnnotations = {
  reconcile: 'kluctl.io/request-reconcile',
  diff: 'kluctl.io/request-diff',
  deploy: 'kluctl.io/request-deploy',
  prune: 'kluctl.io/request-prune',
  validate: 'kluctl.io/request-validate',
};
export const REQUEST_KINDS = Object.keys(REQUEST_ANNOTATIONS) as RequestKind[];
/**
 * Where the controller keeps full command results: its default (--command-result-namespace), the one namespace
 * whose Secrets the auth proxy's roles let every user read.
 */
export const RESULTS_NAMESPACE: typeof ApiResultsNamespace = 'gantry-results';

export type KluctlDeployment = ApiKluctlDeployment & KubeObject & { metadata: ObjectMeta & { namespace: string } };

/** Every KluctlDeployment of the cluster, or one by name. */
export function kluctlPath(namespace?: string, name?: string): string {
  const scope = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `/apis/${GROUP}/${VERSION}${scope}/${PLURAL}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** The page of one KluctlDeployment. */
export function kluctlPage(cluster: string, deployment: { metadata: { namespace: string; name: string } }, tab?: string): string {
  const { namespace, name } = deployment.metadata;
  return `/kluctl/${encodeURIComponent(cluster)}/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${tab ? `/${tab}` : ''}`;
}
