/**
 * vitest globalSetup: makes sure the tools are built and the local cluster (scripts/cluster), the fleet's three
 * workload clusters (support/workload-clusters.ts), the engine files' own local cluster (support/engine-cluster.ts)
 * and PostgreSQL (scripts/postgres) are up before any test file runs, and hands the tests KUBECONFIG (the local
 * cluster's; vitest.config.ts gives the engine's files their own), GANTRY_TEST_POSTGRES_URL and a PATH starting with
 * .cluster/bin (kubectl, helm, kustomize, python3). All are left running for the next run (`npm run cluster -- down
 * --all` and `npm run postgres -- down` stop them).
 */
import { delimiter } from 'node:path';
import { clusterUp } from '../scripts/cluster/cluster.ts';
import { clusterLayout } from '../scripts/cluster/layout.ts';
import { postgresUp } from '../scripts/postgres/postgres.ts';
import { setUpMachine } from '../scripts/setup/setup.ts';
import { ENGINE_CLUSTER } from './support/engine-cluster.ts';
import { ALL_WORKLOAD_CLUSTERS } from './support/workload-clusters.ts';

export default async function setup(): Promise<void> {
  const report = (line: string) => console.error(`global-setup: ${line}`);
  // Cheap when `npm test` already ran scripts/setup.sh; needed for a bare `npx vitest run`.
  await setUpMachine(report);
  const [state, postgres] = await Promise.all([clusterUp({ report }), postgresUp(report)]);
  // After the local cluster, which builds the components on a fresh machine; these then only start them.
  await Promise.all(
    [...ALL_WORKLOAD_CLUSTERS, ENGINE_CLUSTER].map((name) =>
      clusterUp({ layout: clusterLayout(name), report: (line) => report(`${name}: ${line}`) }),
    ),
  );
  // Test workers are started after this returns and inherit the environment of this process.
  process.env.KUBECONFIG = state.kubeconfig;
  process.env.GANTRY_TEST_POSTGRES_URL = postgres.url;
  process.env.PATH = `${clusterLayout().bin}${delimiter}${process.env.PATH ?? ''}`;
}
