/**
 * vitest globalSetup: makes sure the tools are built and the local cluster (scripts/cluster) is up before any test
 * file runs, and hands the tests KUBECONFIG and a PATH starting with .cluster/bin (kubectl, helm, kustomize,
 * python3). The cluster is left running for the next run (`npm run cluster -- down` stops it).
 */
import { delimiter } from 'node:path';
import { clusterUp } from '../scripts/cluster/cluster.ts';
import { clusterLayout } from '../scripts/cluster/layout.ts';
import { setUpMachine } from '../scripts/setup/setup.ts';

export default async function setup(): Promise<void> {
  const report = (line: string) => console.error(`global-setup: ${line}`);
  // Cheap when `npm test` already ran scripts/setup.sh; needed for a bare `npx vitest run`.
  await setUpMachine(report);
  const state = await clusterUp({ report });
  // Test workers are started after this returns and inherit the environment of this process.
  process.env.KUBECONFIG = state.kubeconfig;
  process.env.PATH = `${clusterLayout().bin}${delimiter}${process.env.PATH ?? ''}`;
}
