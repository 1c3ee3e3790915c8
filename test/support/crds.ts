/** Tests that install CRDs and then create objects of them wait as the product does (src/kube/crds.ts). */
import { KubeClient, loadKubeConfig } from '../../src/kube/client.ts';
import { Cluster } from '../../src/kube/cluster.ts';
import { ensureCrdsServed } from '../../src/deploy/crds.ts';

/**
 * Waits up to 60 s until the CRDs `names` are Established and their kinds discovered on the cluster of `kubeconfig`
 * ($KUBECONFIG by default). @throws Error naming the CRDs not served.
 */
export async function crdsServed(names: readonly string[], kubeconfig?: string): Promise<void> {
  const cluster = new Cluster(new KubeClient(loadKubeConfig({ kubeconfig })));
  try {
    await ensureCrdsServed(cluster, names, { timeoutMs: 60_000 });
  } finally {
    await cluster.close();
  }
}
