/**
 * The workload clusters of a test run (the local cluster is the management cluster): started by
 * test/global-setup.ts beside it and, like it, left running for the next run. Named apart from the demo's `dev` and
 * `prod`, so a demo running on the same machine and the tests never touch each other's clusters. Most fleet tests
 * use the two of WORKLOAD_CLUSTERS; a third, STAGE_CLUSTER, is there for what needs three (progressive rollouts).
 */
import path from 'node:path';
import { execa } from 'execa';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import type { KubeConfig } from '@kubernetes/client-node';

const KUBECTL = path.join(clusterLayout().bin, 'kubectl');

export const WORKLOAD_CLUSTERS = ['test-dev', 'test-prod'] as const;
export const STAGE_CLUSTER = 'test-stage';
/** Every workload cluster global-setup starts. */
export const ALL_WORKLOAD_CLUSTERS = [...WORKLOAD_CLUSTERS, STAGE_CLUSTER] as const;
export type WorkloadCluster = (typeof ALL_WORKLOAD_CLUSTERS)[number];

/** The cluster's own kubeconfig file (context `gantry-NAME`). */
export function workloadKubeconfig(name: WorkloadCluster): string {
  return clusterLayout(name).kubeconfig;
}

export function workloadKubeConfig(name: WorkloadCluster): KubeConfig {
  return loadKubeConfig({ kubeconfig: workloadKubeconfig(name) });
}

/** `kubectl <args>` against the workload cluster; returns stdout. */
export async function kubectlOn(name: WorkloadCluster, args: readonly string[], input?: string): Promise<string> {
  return (await execa(KUBECTL, args, { env: { KUBECONFIG: workloadKubeconfig(name) }, input })).stdout;
}

/** `kubectl <args> -o json` against the workload cluster, parsed. */
export async function kubectlJsonOn<T = { items: Array<Record<string, any>> }>(name: WorkloadCluster, args: readonly string[]): Promise<T> {
  return JSON.parse(await kubectlOn(name, [...args, '-o', 'json'])) as T;
}
