/**
 * The second local cluster of a test run. The end-to-end files that need no fleet run on it (vitest.config.ts hands
 * it to them as $KUBECONFIG) while the fleet's files run on the local cluster beside the workload clusters, so the
 * two groups run at the same time without sharing a namespace, a CRD, a ClusterRole or a discriminator.
 * test/global-setup.ts starts it and leaves it running, as it does the others.
 */
export const ENGINE_CLUSTER = 'test-engine';
