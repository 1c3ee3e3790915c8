/**
 * The Go-built tools Gantry's tests, demo and local cluster need, with the exact versions and how each is built.
 * Changing a version here gives a new cache entry; changing only how a tool is built (ldflags) does not, so
 * delete the old entry from the cache when doing that.
 */
import type { GoModFile } from './go-build.ts';

export interface GoTool {
  /** Binary name; with `version` also the cache key. */
  name: string;
  /** Go module providing the tool, fetched at `version` from the module proxy. */
  module: string;
  version: string;
  /** Import path of the package built: the tool's main package, or the one `mainSource` calls into. */
  package: string;
  /**
   * `install`: plain `go install package@version` (the module has no replace directives).
   * `wrapper`: built inside a generated module that requires `module`, for modules `go install` refuses.
   */
  via: 'install' | 'wrapper';
  /** For `wrapper`: a main.go to build instead of `package`, when the module ships no main package. */
  mainSource?: string;
  /**
   * For `wrapper`: upstream's replaces pointing at folders of its own tree (Kubernetes' ./staging/..., Cluster API's
   * ./api), which a module zip leaves out, are redirected to this published version of those modules.
   */
  treeVersion?: string;
  /**
   * For `wrapper`: how its requirements are resolved. `tidy` (the default): `go mod tidy`, which also fetches what the
   * tests of every imported package import. `build`: `go build -mod=mod` fetches only what the binary imports,
   * checked against upstream's go.sum; for modules whose test-only dependencies the module proxy does not serve.
   */
  resolve?: 'tidy' | 'build';
  /** `-X importpath.name=value` stamps, given the tool module's own go.mod. */
  stamps?: (upstream: GoModFile) => string[];
  /** Files copied from the module's source tree into the tool's cache directory (paths relative to both). */
  files?: Array<{ from: string; to: string }>;
}

export const KUBERNETES_VERSION = 'v1.35.4';
// Upstream tags each staging module (k8s.io/api, client-go, ...) v0.X.Y alongside kubernetes v1.X.Y.
const KUBERNETES_STAGING_VERSION = 'v0.35.4';
// What kubernetes v1.35.4's go.mod pins, so etcd matches what that release is tested against.
const ETCD_VERSION = 'v3.6.5';
const KWOK_VERSION = 'v0.8.0';
// The Helm kluctl v2.28.2 embeds (its go.mod: helm.sh/helm/v4 v4.2.2), so charts render as Kluctl renders them: Helm 4
// drops null values from a chart's coalesced values, which Helm 3 printed (`seLinuxOptions: null`).
const HELM_VERSION = 'v4.2.2';
// v5.8.3 needs Go >= 1.27 (a dependency raised its go line); v5.8.2 is the newest that builds with Go 1.26.
const KUSTOMIZE_VERSION = 'v5.8.2';
const SOPS_VERSION = 'v3.13.3';
const AGE_VERSION = 'v1.3.2';
// An OCI registry on 127.0.0.1 for tests of Helm charts from oci:// repositories.
const REGISTRY_VERSION = 'v3.1.2';
// Prometheus for the pipelines' HEALTH gate tests; its Go module is tagged v0.3XX.Y for Prometheus v3.XX.Y.
const PROMETHEUS_VERSION = 'v0.316.0';
/**
 * OpenBao (a Vault-compatible server) for the tests of the `vault` vars source: release v2.4.0, commit f9407a27fbee.
 * Its go.mod says `module github.com/openbao/openbao` while its tags say v2, so the proxy has no tagged version,
 * only this pseudo-version. Its go.mod replaces its api and sdk modules by folders of its own tree, which a module
 * zip leaves out: the wrapper module drops those replaces and so builds with the published api/v2 and sdk/v2 v2.4.0
 * its go.mod requires (the same code as the folders at that commit). Newer releases are not on the proxy.
 */
const OPENBAO_VERSION = 'v0.0.0-20250828202315-f9407a27fbee';
const OPENBAO_RELEASE = '2.4.0';
/**
 * Cluster API's core controllers (the Cluster, ClusterClass topology, Machine* and ClusterResourceSet controllers of
 * `sigs.k8s.io/cluster-api/core`), run on the management cluster of the Cluster API tests (scripts/capi). v1.14.x
 * builds with Go 1.26; its go.mod replaces its api module by the folder ./api, published as the same version.
 */
export const CLUSTER_API_VERSION = 'v1.14.2';
// Assembles, pushes and pulls Gantry's image (scripts/image) and lets its test unpack it; v0.22.x builds with Go 1.26.
const CRANE_VERSION = 'v0.22.1';

/** Without these the binaries report v0.0.0-master, and Helm's kubeVersion checks against the server fail. */
function kubernetesVersionStamps(): string[] {
  const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
  return ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `${pkg}.gitVersion=${KUBERNETES_VERSION}`,
    `${pkg}.gitMajor=${major}`,
    `${pkg}.gitMinor=${minor}`,
    `${pkg}.gitTreeState=clean`,
  ]);
}

function kubernetesTool(name: string): GoTool {
  return {
    name,
    module: 'k8s.io/kubernetes',
    version: KUBERNETES_VERSION,
    package: `k8s.io/kubernetes/cmd/${name}`,
    via: 'wrapper',
    treeVersion: KUBERNETES_STAGING_VERSION,
    stamps: kubernetesVersionStamps,
  };
}

/**
 * Helm's release Makefile stamps its version (a plain build says v4.2). Helm 4 takes its default Kubernetes version
 * for offline rendering from the client-go in its build info, which a module build keeps.
 */
function helmStamps(): string[] {
  return [`helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`, 'helm.sh/helm/v4/internal/version.gitTreeState=clean'];
}

const ETCD_MAIN = `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
`;

// kwok alone simulates nothing: these stock stages make nodes Ready (with lease heartbeats) and drive pods to
// Running, Succeeded (Jobs complete) and deletion. The volume stages are left out on purpose: PVCs stay Pending.
const KWOK_STAGES = [
  'node/fast/node-initialize.yaml',
  'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'pod/fast/pod-ready.yaml',
  'pod/fast/pod-complete.yaml',
  'pod/fast/pod-delete.yaml',
];

/** Name of the kwok stages directory inside kwok's cache directory. */
export const KWOK_STAGES_DIR = 'stages';

/** Files taken from a Go module's source without building anything (CRDs the tests install). */
export interface ModuleFiles {
  /** With `version` the cache key. */
  name: string;
  module: string;
  version: string;
  /** Paths relative to the module's source tree and to the cache entry. */
  files: Array<{ from: string; to: string }>;
}

/** The source-controller release whose GitRepository, HelmRepository and OCIRepository CRDs the Flux tests install (v1.10.x needs Go 1.27). */
const FLUX_SOURCE_CONTROLLER_VERSION = 'v1.9.6';

/** The CRDs of Cluster API's core as `<group>_<plural>`, installed by scripts/capi beside its controllers. */
export const CLUSTER_API_CORE_CRDS = [
  'addons.cluster.x-k8s.io_clusterresourcesetbindings',
  'addons.cluster.x-k8s.io_clusterresourcesets',
  'cluster.x-k8s.io_clusterclasses',
  'cluster.x-k8s.io_clusters',
  'cluster.x-k8s.io_machinedeployments',
  'cluster.x-k8s.io_machinedrainrules',
  'cluster.x-k8s.io_machinehealthchecks',
  'cluster.x-k8s.io_machinepools',
  'cluster.x-k8s.io_machines',
  'cluster.x-k8s.io_machinesets',
  'ipam.cluster.x-k8s.io_ipaddressclaims',
  'ipam.cluster.x-k8s.io_ipaddresses',
  'runtime.cluster.x-k8s.io_extensionconfigs',
];
/** The file of Cluster API core's admission webhook configurations among the linked CRDs (ClusterLayout.crds). */
export const CLUSTER_API_WEBHOOKS_FILE = 'webhooks.cluster.x-k8s.io.yaml';

/** `<group>_<plural>` (controller-gen's file name) as `<plural>.<group>.yaml`, the name ClusterLayout.crds uses. */
export function crdFileName(controllerGenName: string): string {
  const [group, plural] = controllerGenName.split('_');
  return `${plural}.${group}.yaml`;
}

export const MODULE_FILES: readonly ModuleFiles[] = [
  {
    name: 'cluster-api-core-config',
    module: 'sigs.k8s.io/cluster-api',
    version: CLUSTER_API_VERSION,
    files: [
      ...CLUSTER_API_CORE_CRDS.map((crd) => ({ from: `core/config/crd/bases/${crd}.yaml`, to: `crds/${crdFileName(crd)}` })),
      { from: 'core/config/webhook/manifests.yaml', to: `crds/${CLUSTER_API_WEBHOOKS_FILE}` },
    ],
  },
  {
    // kwok's kubelet serves `kubectl logs` for the Pods a Logs object maps to a file (see scripts/cluster/components.ts).
    name: 'kwok-logs-crd',
    module: 'sigs.k8s.io/kwok',
    version: KWOK_VERSION,
    files: [{ from: 'kustomize/crd/bases/kwok.x-k8s.io_logs.yaml', to: 'crds/logs.kwok.x-k8s.io.yaml' }],
  },
  {
    // The cache entry is named after the files it holds: a new file is a new entry, which setup fetches.
    name: 'flux-source-crds-git-helm-oci',
    module: 'github.com/fluxcd/source-controller',
    version: FLUX_SOURCE_CONTROLLER_VERSION,
    files: [
      { from: 'config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml', to: 'crds/gitrepositories.source.toolkit.fluxcd.io.yaml' },
      {
        from: 'config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml',
        to: 'crds/helmrepositories.source.toolkit.fluxcd.io.yaml',
      },
      {
        from: 'config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml',
        to: 'crds/ocirepositories.source.toolkit.fluxcd.io.yaml',
      },
    ],
  },
];

export const TOOLS: readonly GoTool[] = [
  kubernetesTool('kube-apiserver'),
  kubernetesTool('kube-controller-manager'),
  kubernetesTool('kube-scheduler'),
  kubernetesTool('kubectl'),
  {
    name: 'etcd',
    module: 'go.etcd.io/etcd/server/v3',
    version: ETCD_VERSION,
    package: 'go.etcd.io/etcd/server/v3/etcdmain',
    via: 'wrapper',
    mainSource: ETCD_MAIN,
  },
  {
    name: 'kwok',
    module: 'sigs.k8s.io/kwok',
    version: KWOK_VERSION,
    package: 'sigs.k8s.io/kwok/cmd/kwok',
    via: 'install',
    files: KWOK_STAGES.map((stage) => ({
      from: `kustomize/stage/${stage}`,
      to: `${KWOK_STAGES_DIR}/${stage.split('/').pop()}`,
    })),
  },
  {
    name: 'helm',
    module: 'helm.sh/helm/v4',
    version: HELM_VERSION,
    package: 'helm.sh/helm/v4/cmd/helm',
    via: 'install',
    stamps: helmStamps,
  },
  {
    name: 'kustomize',
    module: 'sigs.k8s.io/kustomize/kustomize/v5',
    version: KUSTOMIZE_VERSION,
    package: 'sigs.k8s.io/kustomize/kustomize/v5',
    via: 'install',
  },
  {
    name: 'sops',
    module: 'github.com/getsops/sops/v3',
    version: SOPS_VERSION,
    package: 'github.com/getsops/sops/v3/cmd/sops',
    via: 'install',
  },
  { name: 'age-keygen', module: 'filippo.io/age', version: AGE_VERSION, package: 'filippo.io/age/cmd/age-keygen', via: 'install' },
  { name: 'age', module: 'filippo.io/age', version: AGE_VERSION, package: 'filippo.io/age/cmd/age', via: 'install' },
  {
    name: 'registry',
    module: 'github.com/distribution/distribution/v3',
    version: REGISTRY_VERSION,
    package: 'github.com/distribution/distribution/v3/cmd/registry',
    via: 'install',
  },
  {
    name: 'prometheus',
    module: 'github.com/prometheus/prometheus',
    version: PROMETHEUS_VERSION,
    package: 'github.com/prometheus/prometheus/cmd/prometheus',
    via: 'install',
  },
  {
    name: 'bao',
    module: 'github.com/openbao/openbao',
    version: OPENBAO_VERSION,
    package: 'github.com/openbao/openbao',
    via: 'wrapper',
    // go mod tidy would fetch api/auth/approle/v2 and api/auth/userpass/v2 v2.0.0 for tests; the proxy refuses them.
    resolve: 'build',
    // As its goreleaser config stamps a release; a plain build says 2.0.0-HEAD.
    stamps: () => [
      `github.com/openbao/openbao/version.fullVersion=${OPENBAO_RELEASE}`,
      `github.com/openbao/openbao/version.GitCommit=${OPENBAO_VERSION.split('-').pop()}`,
    ],
  },
  {
    name: 'cluster-api-manager',
    module: 'sigs.k8s.io/cluster-api',
    version: CLUSTER_API_VERSION,
    package: 'sigs.k8s.io/cluster-api/core',
    via: 'wrapper',
    treeVersion: CLUSTER_API_VERSION,
    // go mod tidy would fetch what the tests of every imported package import; the binary needs far less.
    resolve: 'build',
    // As its release Makefile stamps it (a plain build reports no version, and clusterctl's checks read it).
    stamps: () => {
      const [major, minor] = CLUSTER_API_VERSION.slice(1).split('.');
      const pkg = 'sigs.k8s.io/cluster-api/version';
      return [
        `${pkg}.gitVersion=${CLUSTER_API_VERSION}`,
        `${pkg}.gitMajor=${major}`,
        `${pkg}.gitMinor=${minor}`,
        `${pkg}.gitTreeState=clean`,
      ];
    },
  },
  {
    name: 'crane',
    module: 'github.com/google/go-containerregistry',
    version: CRANE_VERSION,
    package: 'github.com/google/go-containerregistry/cmd/crane',
    via: 'install',
  },
];
