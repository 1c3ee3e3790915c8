/**
 * The kubeconfig a KluctlDeployment deploys with, as Kluctl's controller builds it ("Kubeconfigs and RBAC" in its
 * docs): the controller's own cluster as a single context named `default` — impersonating `spec.serviceAccountName`
 * when set — or the kubeconfig in the Secret `spec.kubeConfig.secretRef` (key `value` by default); then the contexts
 * `spec.renameContexts` renames (the Flux Kluctl controller's field), so a target's own context name can match.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { KluctlDeployment } from '../../api/kluctl-deployment.ts';
import type { Cluster } from '../../kube/cluster.ts';
import { readSecret } from '../../kube/secrets.ts';

export const DEFAULT_CONTEXT = 'default';

/**
 * @param own the controller's kubeconfig (in-cluster or from --kubeconfig).
 * @throws Error naming the Secret or key when the kubeconfig cannot be read, or a context to rename that does not exist.
 */
export async function deploymentKubeConfig(deployment: KluctlDeployment, own: KubeConfig, cluster: Cluster): Promise<KubeConfig> {
  const secretRef = deployment.spec.kubeConfig?.secretRef;
  const config = secretRef ? await fromSecret(cluster, deployment.metadata.namespace, secretRef) : ownAsDefault(own, deployment);
  for (const { oldContext, newContext } of deployment.spec.renameContexts ?? []) renameContext(config, oldContext, newContext);
  return config;
}

function ownAsDefault(own: KubeConfig, deployment: KluctlDeployment): KubeConfig {
  const cluster = own.getCurrentCluster();
  const user = own.getCurrentUser();
  if (!cluster || !user) throw new Error("the controller's kubeconfig has no current cluster or user");
  const serviceAccount = deployment.spec.serviceAccountName;
  const impersonate = serviceAccount ? { impersonateUser: `system:serviceaccount:${deployment.metadata.namespace}:${serviceAccount}` } : {};
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ ...cluster, name: DEFAULT_CONTEXT }],
    users: [{ ...user, ...impersonate, name: DEFAULT_CONTEXT }],
    contexts: [{ name: DEFAULT_CONTEXT, cluster: DEFAULT_CONTEXT, user: DEFAULT_CONTEXT }],
    currentContext: DEFAULT_CONTEXT,
  });
  return config;
}

async function fromSecret(cluster: Cluster, namespace: string, ref: { name: string; key?: string }): Promise<KubeConfig> {
  const key = ref.key ?? 'value';
  const text = (await readSecret(cluster, namespace, ref.name))[key];
  if (text === undefined) throw new Error(`Secret ${namespace}/${ref.name} has no key '${key}' with a kubeconfig`);
  const config = new KubeConfig();
  config.loadFromString(text);
  return config;
}

function renameContext(config: KubeConfig, oldName: string, newName: string): void {
  const context = config.getContextObject(oldName);
  if (!context) throw new Error(`renameContexts: the kubeconfig has no context '${oldName}'`);
  const contexts = config.getContexts().map((entry) => (entry.name === oldName ? { ...entry, name: newName } : entry));
  const current = config.getCurrentContext() === oldName ? newName : config.getCurrentContext();
  config.loadFromOptions({ clusters: config.getClusters(), users: config.getUsers(), contexts, currentContext: current });
}
