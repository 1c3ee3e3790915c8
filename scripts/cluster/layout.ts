/**
 * Where the local cluster keeps its files: everything under `.cluster/` in the clone (gitignored), so each
 * checkout has its own cluster and nothing outside the clone holds state.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ClusterLayout {
  /** `.cluster/` itself. */
  root: string;
  /** Links to the tools (kubectl, helm, kustomize, kube-apiserver, etcd, kwok, python3, ...); put it on PATH. */
  bin: string;
  /** CRDs of other projects the tests install, by `<plural>.<group>.yaml` (links into the tool cache). */
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
  /** Held while `up` or `down` runs, so two of them in one clone cannot interleave. */
  lock: string;
}

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The layout of `<repoRoot>/.cluster/` (default: this clone). */
export function clusterLayout(repoRoot: string = REPO_ROOT): ClusterLayout {
  const root = join(repoRoot, '.cluster');
  return {
    root,
    bin: join(root, 'bin'),
    crds: join(root, 'crds'),
    kwokStages: join(root, 'kwok-stages'),
    data: join(root, 'data'),
    logs: join(root, 'logs'),
    state: join(root, 'state.json'),
    kubeconfig: join(root, 'kubeconfig'),
    lock: join(root, 'lock'),
  };
}
