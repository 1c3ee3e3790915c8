/**
 * Where the local clusters keep their files: everything under `.cluster/` in the clone (gitignored), so each
 * checkout has its own clusters and nothing outside the clone holds state. The tools are shared by every cluster;
 * the default cluster `local` keeps its files at the top of `.cluster/` (as before several clusters existed), any
 * other cluster under `.cluster/clusters/<name>/`.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The cluster `npm run cluster -- up` starts without `--name`; its kubeconfig context is `gantry-local`. */
export const DEFAULT_CLUSTER = 'local';

/** A cluster name: a DNS label, as it becomes part of the kubeconfig context `gantry-<name>`. */
const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/;

export interface ClusterLayout {
  /** The cluster's name (`local` by default). */
  name: string;
  /** The kubeconfig context (and cluster) name in its kubeconfig: `gantry-<name>`. */
  context: string;
  /** `.cluster/` itself. */
  root: string;
  /** Links to the tools (kubectl, helm, kustomize, kube-apiserver, etcd, kwok, python3, ...); put it on PATH. */
  bin: string;
  /** CRDs of other projects the tests install, by `<plural>.<group>.yaml`, and Cluster API's webhook configurations (links into the tool cache). */
  crds: string;
  /** kwok's stage definitions (a link into the tool cache). */
  kwokStages: string;
  /** etcd data, certificates, tokens, the components' kubeconfig; removed by `down`. */
  data: string;
  /** One `<component>.log` per process. */
  logs: string;
  /** state.json: ports and pids of the running cluster. */
  state: string;
  /** The kubeconfig for users and tests (written by `up`, removed by `down`). */
  kubeconfig: string;
  /** Held while `up` or `down` runs, so two of them for one cluster cannot interleave. */
  lock: string;
}

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The layout of cluster `name` under `<repoRoot>/.cluster/` (default: this clone).
 * @throws Error when `name` is not a DNS label of at most 32 characters.
 */
export function clusterLayout(name: string = DEFAULT_CLUSTER, repoRoot: string = REPO_ROOT): ClusterLayout {
  if (!NAME_PATTERN.test(name)) throw new Error(`cluster: invalid name ${JSON.stringify(name)}: use lower-case letters, digits and '-'`);
  const root = join(repoRoot, '.cluster');
  const dir = name === DEFAULT_CLUSTER ? root : join(root, 'clusters', name);
  return {
    name,
    context: `gantry-${name}`,
    root,
    bin: join(root, 'bin'),
    crds: join(root, 'crds'),
    kwokStages: join(root, 'kwok-stages'),
    data: join(dir, 'data'),
    logs: join(dir, 'logs'),
    state: join(dir, 'state.json'),
    kubeconfig: join(dir, 'kubeconfig'),
    lock: join(dir, 'lock'),
  };
}

/** Names of the clusters that have files in `<repoRoot>/.cluster/`, the default first, then by name. */
export async function knownClusters(repoRoot: string = REPO_ROOT): Promise<string[]> {
  const named = await readdir(join(repoRoot, '.cluster', 'clusters')).catch(() => []);
  return [DEFAULT_CLUSTER, ...named.filter((name) => NAME_PATTERN.test(name) && name !== DEFAULT_CLUSTER).sort()];
}
