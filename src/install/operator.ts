/**
 * What `gantry operator install` (and `gantry up --runtime cluster`) put into the management cluster: the fleet's
 * CRDs, the namespace, a ServiceAccount with only what the operator does (its own kinds and their status and
 * finalizers; Secrets it reads as references and writes as deploy tokens; Leases for leader election; Flux
 * GitRepositories and HelmRepositories it reads; Events), a Secret with the admin API token, and a Deployment running `gantry operator
 * run --leader-election`, so a second replica can stand by. Objects as data, deployed by the engine.
 */
import type { KubeObject } from '../kube/object.ts';
import { FLEET_GROUP } from '../api/fleet.ts';
import { FLUX_SOURCE_GROUP } from '../source/flux-artifact.ts';

export const OPERATOR_NAMESPACE = 'gantry-system';
export const OPERATOR_NAME = 'gantry-operator';
/** Discriminator of `gantry operator install`'s objects. */
export const OPERATOR_INSTALL_DISCRIMINATOR = 'gantry-operator-install';
/** The Secret (key `token`) holding the admin API token, shared with an in-cluster server. */
export const ADMIN_TOKEN_SECRET = 'gantry-admin-token';
const TOKEN_DIR = '/etc/gantry/admin';

export interface OperatorInstall {
  /** The server's URL as the operator's pod reaches it. */
  server: string;
  /** Image reference, e.g. ghcr.io/gantry-dev/gantry:0.1.0. */
  image: string;
  /** The admin token, put into the Secret gantry-admin-token; undefined: that Secret is made by someone else. */
  adminToken?: string;
}

export function namespaceManifest(): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OPERATOR_NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'gantry' } } };
}

/** Everything but the CRDs and the namespace. */
export function operatorWorkload(install: OperatorInstall): KubeObject[] {
  const labels = { 'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/part-of': 'gantry' };
  const metadata = (name: string) => ({ name, namespace: OPERATOR_NAMESPACE, labels });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(OPERATOR_NAME) },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: OPERATOR_NAME, labels }, rules: operatorRules() },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: OPERATOR_NAME, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: OPERATOR_NAME },
      subjects: [{ kind: 'ServiceAccount', name: OPERATOR_NAME, namespace: OPERATOR_NAMESPACE }],
    },
    ...(install.adminToken === undefined
      ? []
      : [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: metadata(ADMIN_TOKEN_SECRET),
            type: 'Opaque',
            stringData: { token: install.adminToken },
          },
        ]),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata(OPERATOR_NAME),
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': OPERATOR_NAME } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: OPERATOR_NAME,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            containers: [
              {
                name: 'operator',
                image: install.image,
                args: [
                  'operator',
                  'run',
                  '--server',
                  install.server,
                  '--token-file',
                  `${TOKEN_DIR}/token`,
                  '--leader-election',
                  '--metrics-bind-address',
                  '0.0.0.0:8080',
                  '--health-probe-bind-address',
                  '0.0.0.0:8081',
                ],
                ports: [
                  { name: 'metrics', containerPort: 8080 },
                  { name: 'probes', containerPort: 8081 },
                ],
                readinessProbe: { httpGet: { path: '/readyz', port: 'probes' }, periodSeconds: 10 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'probes' }, periodSeconds: 20 },
                resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [
                  { name: 'token', mountPath: TOKEN_DIR, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'token', secret: { secretName: ADMIN_TOKEN_SECRET } },
              { name: 'tmp', emptyDir: {} },
            ],
          },
        },
      },
    },
  ];
}

/** Least privilege for what src/operator does; nothing cluster-wide beyond reading and its own kinds. */
function operatorRules(): Array<Record<string, unknown>> {
  const read = ['get', 'list', 'watch'];
  return [
    { apiGroups: [FLEET_GROUP], resources: ['*'], verbs: [...read, 'update', 'patch'] },
    { apiGroups: [FLEET_GROUP], resources: ['*/status', '*/finalizers'], verbs: ['get', 'update', 'patch'] },
    // References are read; a Cluster's deploy token is written (server-side apply: create and patch).
    { apiGroups: [''], resources: ['secrets'], verbs: [...read, 'create', 'patch'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: read },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...read, 'create', 'update'] },
    { apiGroups: [FLUX_SOURCE_GROUP], resources: ['gitrepositories', 'helmrepositories'], verbs: read },
    // Discovery of the Flux source CRD at start.
    { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: read },
  ];
}

/**
 * The Secret (key `token`, beside the resource) the operator writes the deploy token of a cluster that a Cluster
 * resource created to, for `gantry agent install` or an agent's Deployment to mount.
 */
export function deployTokenSecretName(resourceName: string): string {
  return `${resourceName}-deploy-token`;
}
