/**
 * The fleet repository `gantry up` writes, as Plural's `plural up` writes its own: a README, `bootstrap/` (a Kluctl
 * project of the fleet's CRDs, its namespace, this repository and the management cluster as resources, and two
 * "app of apps" ServiceDeployments; with `runtime: cluster` also the server, the operator and the management
 * cluster's agent), `clusters/` and `services/`, both synced by those apps from the repository itself.
 */
import { agentInstallManifests } from '../install/agent.ts';
import type { KubeObject } from '../kube/object.ts';
import { fleetCrds } from '../install/fleet-crds.ts';
import { deployTokenSecretName, OPERATOR_NAMESPACE, operatorWorkload } from '../install/operator.ts';
import { inClusterServerUrl, serverInstallManifests } from '../install/server.ts';
import { toYaml } from '../yaml.ts';

export const UP_NAMESPACE = OPERATOR_NAMESPACE;
/** The bootstrap project's discriminator: a re-run prunes what an older bootstrap made and nothing else. */
export const BOOTSTRAP_DISCRIMINATOR = 'gantry-up-bootstrap';
export const REPOSITORY_RESOURCE = 'gantry-fleet';
/** The root ServiceDeployments (app of apps), each syncing the folder of its name. */
export const ROOT_APPS = ['clusters', 'services'] as const;

export interface RepositorySettings {
  /** The URL the server fetches this repository from (its `origin`). */
  url: string;
  /** The branch the apps follow. */
  branch: string;
  /** Handle of the management cluster on the server, its Cluster resource's name. */
  managementCluster: string;
  /** Gantry's image, for the server, operator and agent of `runtime: cluster`. */
  image: string;
}

/**
 * What `runtime: cluster` runs in the management cluster (bootstrap/gantry/): the server on its volume, the operator
 * with the admin token Secret `up` makes, and the cluster's own agent with the deploy token the operator writes
 * beside the management Cluster resource.
 */
export function clusterRuntimeObjects(settings: RepositorySettings): KubeObject[] {
  const server = inClusterServerUrl();
  return [
    ...serverInstallManifests({ image: settings.image, storage: '1Gi' }),
    ...operatorWorkload({ server, image: settings.image }),
    ...agentInstallManifests({
      server,
      image: settings.image,
      namespace: UP_NAMESPACE,
      token: { secretName: deployTokenSecretName(settings.managementCluster) },
    }),
  ];
}

const API_VERSION = 'deployments.gantry.dev/v1alpha1';

/** The repository's files: path → content. */
export function repositoryFiles(settings: RepositorySettings): Record<string, string> {
  const files: Record<string, string> = {
    'README.md': readme(settings),
    'bootstrap/.kluctl.yaml': toYaml({
      discriminator: BOOTSTRAP_DISCRIMINATOR,
      args: [{ name: 'runtime', default: 'cluster' }],
    }),
    'bootstrap/deployment.yaml': bootstrapDeployment(),
    'bootstrap/gantry/gantry.yaml': documents(clusterRuntimeObjects(settings)),
    'bootstrap/crds/fleet-crds.yaml': documents(fleetCrds()),
    'bootstrap/namespace/namespace.yaml': toYaml({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: UP_NAMESPACE } }),
    'bootstrap/fleet/repository.yaml': toYaml({
      apiVersion: API_VERSION,
      kind: 'GitRepository',
      metadata: { name: REPOSITORY_RESOURCE },
      spec: { url: settings.url },
    }),
    'bootstrap/fleet/management-cluster.yaml': toYaml({
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: settings.managementCluster, namespace: UP_NAMESPACE },
      spec: { handle: settings.managementCluster, tags: { role: 'management' } },
    }),
    'bootstrap/fleet/apps.yaml': documents(ROOT_APPS.map((folder) => rootApp(folder, settings))),
    'clusters/README.md': `# clusters\n\nCluster resources (namespace ${UP_NAMESPACE}), synced by the ServiceDeployment \`clusters\`. A new file\nhere registers a cluster; its agent's deploy token appears in the Secret \`<name>-deploy-token\` beside it.\n`,
    'services/README.md': `# services\n\nServiceDeployments and GlobalServices (namespace ${UP_NAMESPACE}), synced by the ServiceDeployment\n\`services\`. Add a file and push to deploy a service; remove it and push to remove the service and its objects.\n`,
  };
  return files;
}

function bootstrapDeployment(): string {
  const items = [
    { path: 'crds' },
    { path: 'namespace' },
    { barrier: true },
    { path: 'gantry', when: 'args.runtime == "cluster"' },
    { path: 'fleet' },
  ];
  return `# Deployed onto the management cluster by \`gantry up\` (args.runtime: cluster, or local when the server, operator\n# and agent run as local processes).\n${toYaml({ deployments: items })}`;
}

function rootApp(folder: string, settings: RepositorySettings): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'ServiceDeployment',
    metadata: { name: folder, namespace: UP_NAMESPACE },
    spec: {
      namespace: UP_NAMESPACE,
      clusterRef: { name: settings.managementCluster },
      repositoryRef: { name: REPOSITORY_RESOURCE },
      git: { ref: settings.branch, folder },
    },
  };
}

function documents(objects: ReadonlyArray<object>): string {
  return objects.map((object) => toYaml(object)).join('---\n');
}

function readme(settings: RepositorySettings): string {
  return `# Fleet repository

Made by \`gantry up\`; the fleet is what this repository says. The management cluster runs the Gantry server, the
operator and its own agent; the operator turns the resources below into the server's clusters and services, and
each cluster's agent deploys its services.

| path | what | applied by |
|---|---|---|
| \`bootstrap/\` | Kluctl project: the fleet's CRDs, namespace \`${UP_NAMESPACE}\`, this repository (GitRepository \`${REPOSITORY_RESOURCE}\`), the management Cluster \`${settings.managementCluster}\`, and the ServiceDeployments \`clusters\` and \`services\` syncing the two folders below ("app of apps"); with \`runtime: cluster\`, also the server, the operator and the management cluster's agent | \`gantry up\` |
| \`clusters/\` | Cluster resources | the app \`clusters\`, on push |
| \`services/\` | ServiceDeployments and GlobalServices | the app \`services\`, on push |
| \`.gantry/up.json\` | what \`gantry up\` last wrote (sha256 per file) | \`gantry up\` |

Deploy a service: add a file to \`services/\` and push.

\`\`\`yaml
apiVersion: ${API_VERSION}
kind: ServiceDeployment
metadata:
  name: hello
  namespace: ${UP_NAMESPACE}
spec:
  namespace: hello                # where its objects go
  clusterRef: {name: ${settings.managementCluster}}
  repositoryRef: {name: ${REPOSITORY_RESOURCE}}
  git: {ref: ${settings.branch}, folder: apps/hello}
\`\`\`

Removing the file and pushing removes the service and its objects. Re-running \`gantry up\` is safe: it upgrades
the files it wrote that you have not edited, keeps (and names) those you have, and redeploys \`bootstrap/\`.
`;
}
