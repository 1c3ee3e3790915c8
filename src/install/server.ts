/**
 * `gantry server` in a cluster, as `gantry up --runtime cluster` installs it: a one-replica Deployment (Recreate:
 * SQLite has one writer) on a PersistentVolumeClaim holding the database and its encryption key, the admin token
 * from the Secret gantry-admin-token (made by the installer, never in git), and the Service `gantry-server` on
 * port 8090 that the operator and the agents reach. For high availability, point `--database-url` at PostgreSQL and
 * raise the replicas (docs/fleet.md); this install is the embedded-database one.
 */
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import { ADMIN_TOKEN_SECRET, namespaceManifest, OPERATOR_NAMESPACE } from './operator.ts';
import { newApiToken } from '../crypto/tokens.ts';

export const SERVER_NAME = 'gantry-server';
export const SERVER_PORT = 8090;
/** Discriminator of `gantry server install`'s objects. */
export const SERVER_INSTALL_DISCRIMINATOR = 'gantry-server-install';

export interface ServerInstall {
  /** Image reference, e.g. ghcr.io/gantry-dev/gantry:0.1.0. */
  image: string;
  /** Size of the database volume, e.g. 1Gi. */
  storage: string;
  /**
   * Where browsers reach the server through an ingress, e.g. https://gantry.example.com (`--public-url`): with https
   * the session cookies are Secure whatever the ingress tells the server, and browser changes must come from it.
   */
  publicUrl?: string | undefined;
}

/** The server's URL inside the cluster. */
export function inClusterServerUrl(): string {
  return `http://${SERVER_NAME}.${OPERATOR_NAMESPACE}.svc:${SERVER_PORT}`;
}

export function serverInstallManifests(install: ServerInstall): KubeObject[] {
  const labels = { 'app.kubernetes.io/name': SERVER_NAME, 'app.kubernetes.io/part-of': 'gantry' };
  const metadata = (name: string) => ({ name, namespace: OPERATOR_NAMESPACE, labels });
  const probe = (path: string) => ({ httpGet: { path, port: 'http' }, periodSeconds: 10 });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(SERVER_NAME) },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: metadata(`${SERVER_NAME}-data`),
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: install.storage } } },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(SERVER_NAME),
      spec: { selector: { 'app.kubernetes.io/name': SERVER_NAME }, ports: [{ name: 'http', port: SERVER_PORT, targetPort: 'http' }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata(SERVER_NAME),
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { 'app.kubernetes.io/name': SERVER_NAME } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: SERVER_NAME,
            // The server needs no Kubernetes API: no token in the pod.
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
            containers: [
              {
                name: 'server',
                image: install.image,
                args: [
                  'server',
                  '--listen',
                  `0.0.0.0:${SERVER_PORT}`,
                  '--data-dir',
                  '/var/lib/gantry',
                  '--cache-dir',
                  '/var/cache/gantry',
                  '--admin-token-file',
                  '/etc/gantry/admin/token',
                ],
                ...(install.publicUrl ? { env: [{ name: 'GANTRY_PUBLIC_URL', value: install.publicUrl }] } : {}),
                ports: [{ name: 'http', containerPort: SERVER_PORT }],
                readinessProbe: probe('/readyz'),
                livenessProbe: probe('/healthz'),
                resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [
                  { name: 'admin-token', mountPath: '/etc/gantry/admin', readOnly: true },
                  { name: 'data', mountPath: '/var/lib/gantry' },
                  { name: 'cache', mountPath: '/var/cache/gantry' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'admin-token', secret: { secretName: ADMIN_TOKEN_SECRET } },
              { name: 'data', persistentVolumeClaim: { claimName: `${SERVER_NAME}-data` } },
              { name: 'cache', emptyDir: {} },
              { name: 'tmp', emptyDir: {} },
            ],
          },
        },
      },
    },
  ];
}

/**
 * The Secret gantry-admin-token (key `token`) the in-cluster server and operator share, made once with a new random
 * API token, never rendered into a project or git, so re-installs keep it (the server only reads it on an empty
 * database). Its namespace is made first when missing, as the Secret must exist before the server starts.
 * @returns whether the Secret was made now (false: it existed, its token is kept).
 * @throws the API server's error when the namespace or the Secret cannot be read or written.
 */
export async function ensureAdminTokenSecret(cluster: Cluster, fieldManager: string): Promise<boolean> {
  // Created only when missing: applying it would take the labels an install project put on it.
  const namespace = { group: '', version: 'v1', kind: 'Namespace', namespace: '', name: OPERATOR_NAMESPACE };
  if (!(await cluster.get(namespace))) await cluster.create(namespaceManifest(), { fieldManager });
  const ref = { group: '', version: 'v1', kind: 'Secret', namespace: OPERATOR_NAMESPACE, name: ADMIN_TOKEN_SECRET };
  if (await cluster.get(ref)) return false;
  // create, not apply: when two installs race, the second fails rather than replacing the first one's token.
  await cluster.create(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: ADMIN_TOKEN_SECRET, namespace: OPERATOR_NAMESPACE },
      type: 'Opaque',
      stringData: { token: newApiToken() },
    },
    { fieldManager },
  );
  return true;
}

/** How to read the admin token: a kubectl command, never the token itself. */
export function adminTokenHint(): string {
  return `kubectl get secret ${ADMIN_TOKEN_SECRET} -n ${OPERATOR_NAMESPACE} -o jsonpath='{.data.token}' | base64 -d`;
}
