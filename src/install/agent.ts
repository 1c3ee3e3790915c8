/**
 * What `gantry agent install` puts into a cluster: a namespace, a ServiceAccount bound to cluster-admin (an agent
 * applies whatever its services hold, as Plural's deployment-operator does), a Secret with the cluster's deploy token
 * (which the agent reads, and replaces when it rotates the token), and a one-replica Deployment running
 * `gantry agent run` from Gantry's image. Objects as
 * data, deployed by the engine like any rendered project.
 */
import type { AgentSource } from '../api/services.ts';
import type { KubeObject } from '../kube/object.ts';

export const AGENT_NAMESPACE = 'gantry-agent';
export const AGENT_NAME = 'gantry-agent';
/** Discriminator of the install's objects, so a re-install prunes what an older one made and nothing else. */
export const AGENT_INSTALL_DISCRIMINATOR = 'gantry-agent-install';
/**
 * The agent container's own image, which no API tells a process: an agent that has it (and a --token-secret) runs as
 * this Deployment, and reports how (AgentDeployment) so that the server keeps it as the service gantry-agent.
 */
export const AGENT_IMAGE_ENV = 'GANTRY_AGENT_IMAGE';
/** The port of the agent's probes (agent/health-server.ts). */
export const AGENT_HEALTH_PORT = 8081;

/**
 * V8's limits for the agent's Node (its container's NODE_OPTIONS): semi-spaces of 2 MiB instead of V8's 16 MiB on
 * 64-bit, since an agent works in bursts (a sync) and a small young generation costs only more, shorter scavenges;
 * the old space capped well below the container's memory limit, which the Jinja2 workers and helm share, so V8
 * collects hard before the kernel kills. `npm run bench -- --only fleet` runs its agents with these flags.
 */
export const AGENT_NODE_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=320'] as const;

/** The tag of an image reference (`repo:tag`, `host:port/repo:tag@sha256:…`), or undefined when it has none. */
export function imageTag(image: string): string | undefined {
  const name = image.split('@')[0]!;
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(colon + 1) : undefined;
}

const AGENT_LABELS = { 'app.kubernetes.io/name': AGENT_NAME, 'app.kubernetes.io/part-of': 'gantry' };

export interface AgentInstall {
  server: string;
  /**
   * The cluster's deploy token, put into the Secret `gantry-agent-token`; or the name of a Secret (key `token`) in
   * the agent's namespace made by someone else, e.g. the operator's `<cluster>-deploy-token`.
   */
  token: { value: string } | { secretName: string };
  /** Image reference, e.g. ghcr.io/gantry-dev/gantry:0.1.0. */
  image: string;
  /** Default gantry-agent; another namespace (the management cluster's gantry-system) is not created here. */
  namespace?: string;
}

/** The install's objects: the namespace first when it is the agent's own. */
export function agentInstallManifests(install: AgentInstall): KubeObject[] {
  const labels = AGENT_LABELS;
  const namespace = install.namespace ?? AGENT_NAMESPACE;
  const metadata = (name: string) => ({ name, namespace, labels });
  const tokenSecret = 'secretName' in install.token ? install.token.secretName : `${AGENT_NAME}-token`;
  return [
    ...(namespace === AGENT_NAMESPACE ? [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: AGENT_NAMESPACE, labels } }] : []),
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(AGENT_NAME) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      // Named after a namespace other than the agent's own, so that two installs in one cluster (the management
      // cluster's own agent in gantry-system beside one in gantry-agent) never take each other's binding.
      metadata: { name: namespace === AGENT_NAMESPACE ? `${AGENT_NAME}-cluster-admin` : `${AGENT_NAME}-${namespace}-cluster-admin`, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: AGENT_NAME, namespace }],
    },
    ...('value' in install.token
      ? [{ apiVersion: 'v1', kind: 'Secret', metadata: metadata(tokenSecret), type: 'Opaque', stringData: { token: install.token.value } }]
      : []),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata(AGENT_NAME),
      spec: {
        replicas: 1,
        // The new pod first, the old one stopped only once the new one is ready (its agent reached the server): a new
        // agent that cannot start or reach the server leaves the old one running, which an agents' rollout rolls back
        // to. The two pods' agents campaign for a Lease (--leader-elect): only one works at a time.
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        // A new agent that dies at once after its start is not ready long enough to replace the old one.
        minReadySeconds: 5,
        selector: { matchLabels: { 'app.kubernetes.io/name': AGENT_NAME } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: AGENT_NAME,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
            containers: [
              {
                name: 'agent',
                image: install.image,
                args: [
                  'agent',
                  'run',
                  '--server',
                  install.server,
                  // Read through the API, not a mount the kubelet refreshes late: a rotated token is stored there.
                  '--token-secret',
                  `${namespace}/${tokenSecret}`,
                  '--data-dir',
                  '/var/lib/gantry/agent',
                  '--health-addr',
                  `:${AGENT_HEALTH_PORT}`,
                  '--leader-elect',
                ],
                ports: [{ name: 'health', containerPort: AGENT_HEALTH_PORT }],
                readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, periodSeconds: 5, failureThreshold: 2 },
                env: [
                  { name: AGENT_IMAGE_ENV, value: install.image },
                  { name: 'GANTRY_CACHE_DIR', value: '/var/cache/gantry' },
                  { name: 'NODE_OPTIONS', value: AGENT_NODE_FLAGS.join(' ') },
                ],
                // Idle ~110-150 MiB, peaks ~230 MiB with its Jinja2 workers while syncing the microservices demo
                // (docs/fleet.md, Benchmark); the limit leaves room for a larger project's helm and Python.
                resources: { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [
                  { name: 'data', mountPath: '/var/lib/gantry' },
                  { name: 'cache', mountPath: '/var/cache/gantry' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'data', emptyDir: {} },
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
 * The objects of the cluster's own agent service (server/agent-service.ts): the install's, less the namespace (the
 * service's namespace, which the agent keeps) and with the token Secret's metadata only, so the service owns the
 * Secret while its token stays the agent's to rotate (a Secret applied with data would put an old token back). Each
 * is force-applied (Kluctl's `kluctl.io/force-apply`): the service takes over the fields the bootstrap install's
 * field manager set, from then on the server keeps them.
 * @param agent the Deployment's image, server URL and token Secret (namespace/name, in the agent's namespace).
 */
export function agentServiceManifests(agent: AgentSource): KubeObject[] {
  const [namespace, secretName] = agent.tokenSecret.split('/') as [string, string];
  const installed = agentInstallManifests({ server: agent.server, token: { secretName }, image: agent.image, namespace });
  const secret: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace, labels: AGENT_LABELS } };
  return [...installed.filter((object) => object.kind !== 'Namespace'), secret].map((object) => ({
    ...object,
    metadata: { ...object.metadata, annotations: { 'kluctl.io/force-apply': 'true' } },
  }));
}
