/**
 * What the auth proxy's impersonated groups may do on a cluster by default: the agent applies these ClusterRoles
 * and their bindings when it starts, because the group names are its contract with the server (rights.ts
 * clusterGroups) and must arrive with the agent that maps to them. Operators widen or narrow them with their
 * own bindings to the same groups; the cluster's RBAC always has the last word.
 *  - gantry-proxy-reader (groups gantry:reader, gantry:approver, gantry:writer, gantry:admin): get, list and watch
 *    every resource except Secrets (RBAC cannot subtract, so the core group's resources are listed), and pod logs.
 *  - gantry-proxy-writer (groups gantry:writer, gantry:admin): also patch and update KluctlDeployments, which is how
 *    the UI asks for a deploy, a prune, a reconcile, a suspension or an approval.
 *  - gantry-proxy-results (all four groups, a Role in the command results' namespace): read the Secrets there, which
 *    hold the KluctlDeployments' command results, obfuscated before they are kept (deploy/result-store.ts). The
 *    namespace is made when missing, so the binding exists before the controller's first result.
 */
import { FLEET_GROUP } from '../api/fleet.ts';
import { GROUP as KLUCTL_GROUP, PLURAL as KLUCTL_PLURAL } from '../api/kluctl-deployment.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import { DEFAULT_RESULTS_NAMESPACE } from '../deploy/result-store.ts';

const READ = ['get', 'list', 'watch'];
/** The core group's resources a reader sees: all but Secrets. */
const CORE_READABLE = [
  'configmaps',
  'endpoints',
  'events',
  'limitranges',
  'namespaces',
  'nodes',
  'persistentvolumeclaims',
  'persistentvolumes',
  'pods',
  'pods/log',
  'podtemplates',
  'replicationcontrollers',
  'resourcequotas',
  'serviceaccounts',
  'services',
];

export const PROXY_READER_ROLE = 'gantry-proxy-reader';
export const PROXY_WRITER_ROLE = 'gantry-proxy-writer';
export const PROXY_RESULTS_ROLE = 'gantry-proxy-results';
const ALL_GROUPS = ['gantry:reader', 'gantry:approver', 'gantry:writer', 'gantry:admin'];

export function proxyRbacManifests(): KubeObject[] {
  const labels = { 'app.kubernetes.io/part-of': 'gantry', 'app.kubernetes.io/component': 'auth-proxy' };
  const role = (name: string, rules: object[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, labels },
    rules,
  });
  const binding = (name: string, groups: string[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: groups.map((group) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group })),
  });
  return [
    role(PROXY_READER_ROLE, [
      { apiGroups: [''], resources: CORE_READABLE, verbs: READ },
      // Every other group: none of the built-in ones holds Secrets.
      ...NON_CORE_GROUPS.map((group) => ({ apiGroups: [group], resources: ['*'], verbs: READ })),
      { nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version', '/openapi/*'], verbs: ['get'] },
    ]),
    role(PROXY_WRITER_ROLE, [{ apiGroups: [KLUCTL_GROUP], resources: [KLUCTL_PLURAL], verbs: ['patch', 'update'] }]),
    binding(PROXY_READER_ROLE, ALL_GROUPS),
    binding(PROXY_WRITER_ROLE, ['gantry:writer', 'gantry:admin']),
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEFAULT_RESULTS_NAMESPACE, labels } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: PROXY_RESULTS_ROLE, namespace: DEFAULT_RESULTS_NAMESPACE, labels },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: READ }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: PROXY_RESULTS_ROLE, namespace: DEFAULT_RESULTS_NAMESPACE, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: PROXY_RESULTS_ROLE },
      subjects: ALL_GROUPS.map((group) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group })),
    },
  ];
}

/**
 * API groups a reader lists. Not `*`, which would take in any custom group holding secret material
 * (external-secrets' and sealed-secrets' groups are left out on purpose).
 */
const NON_CORE_GROUPS = [
  'apps',
  'batch',
  'autoscaling',
  'policy',
  'networking.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'storage.k8s.io',
  'scheduling.k8s.io',
  'node.k8s.io',
  'coordination.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'rbac.authorization.k8s.io',
  'admissionregistration.k8s.io',
  KLUCTL_GROUP,
  FLEET_GROUP,
  'source.toolkit.fluxcd.io',
  'helm.toolkit.fluxcd.io',
  'kustomize.toolkit.fluxcd.io',
  'monitoring.coreos.com',
];

/** Applies the manifests with server-side apply. @throws the API server's error (e.g. no right to make roles). */
export async function ensureProxyRbac(cluster: Cluster, fieldManager: string): Promise<void> {
  for (const object of proxyRbacManifests()) await cluster.apply(object, { fieldManager, force: true });
}
