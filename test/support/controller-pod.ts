/**
 * The out-of-cluster test controller as the gitops log commands find an installed one: a Pod labelled
 * app.kubernetes.io/name=gantry-controller, run by kwok, whose container log kwok's kubelet serves from the
 * controller's CRI log file (startController's `criLogFile`), as a Logs object (kwok.x-k8s.io/v1alpha1, named as the
 * Pod) maps it. `kubectl logs` and `gantry gitops logs` then read the real controller's lines through the API server.
 */
import { kubectl } from './cli.ts';
import { applyObject, waitFor } from './controller.ts';

export const CONTROLLER_POD = 'gantry-controller-e2e';

/**
 * Creates the Pod and its Logs object in `namespace` (created when missing) and resolves once the API server
 * answers `kubectl logs` for it.
 * @returns the Pod's name.
 */
export async function registerControllerPod(namespace: string, criLogFile: string): Promise<string> {
  await kubectl(['create', 'namespace', namespace]).catch((error: Error) => {
    if (!/AlreadyExists/.test(error.message)) throw error;
  });
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: CONTROLLER_POD, namespace, labels: { 'app.kubernetes.io/name': 'gantry-controller' } },
    spec: { containers: [{ name: 'controller', image: 'ghcr.io/gantry-dev/gantry:e2e' }] },
  };
  // The namespace's default ServiceAccount, which admission requires, comes a moment after the namespace.
  await waitFor(
    () =>
      applyObject(pod)
        .then(() => true)
        .catch((error: Error) => (/serviceaccount/i.test(error.message) ? false : Promise.reject(error))),
    30_000,
    () => `Pod ${namespace}/${CONTROLLER_POD} created`,
  );
  await applyObject({
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    kind: 'Logs',
    metadata: { name: CONTROLLER_POD, namespace },
    spec: { logs: [{ containers: ['controller'], logsFile: criLogFile, follow: true }] },
  });
  await waitFor(
    () =>
      kubectl(['logs', '-n', namespace, CONTROLLER_POD, '--tail=1'])
        .then(() => true)
        .catch(() => false),
    30_000,
    () => `kubectl logs of ${namespace}/${CONTROLLER_POD} answering`,
  );
  return CONTROLLER_POD;
}
