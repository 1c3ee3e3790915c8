/**
 * Command lines of the cluster's five processes. Everything listens on 127.0.0.1 only, on ports the OS handed out.
 */
import { join } from 'node:path';
import type { ClusterCredentials } from './credentials.ts';

export interface ClusterPorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  /** kwok's kubelet server, which the apiserver asks for `kubectl logs` of the fake nodes' Pods. */
  kubelet: number;
}

export const PORT_NAMES: ReadonlyArray<keyof ClusterPorts> = [
  'etcdClient',
  'etcdPeer',
  'apiserver',
  'controllerManager',
  'scheduler',
  'kubelet',
];

export interface ComponentCommand {
  name: string;
  /** Binary name in .cluster/bin. */
  binary: string;
  args: string[];
}

/** The service ClusterIP range; kwok's pod IPs come from a separate range so the two never overlap. */
const SERVICE_CIDR = '10.0.0.0/24';
const POD_CIDR = '10.244.0.0/16';

export function etcdCommand(ports: ClusterPorts, dataDir: string): ComponentCommand {
  const client = `http://127.0.0.1:${ports.etcdClient}`;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return {
    name: 'etcd',
    binary: 'etcd',
    args: [
      '--name=gantry',
      `--data-dir=${join(dataDir, 'etcd')}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=gantry=${peer}`,
      // A throwaway test cluster: losing writes on a machine crash is fine, waiting for fsync on every write is not.
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
  };
}

export function apiserverCommand(ports: ClusterPorts, credentials: ClusterCredentials): ComponentCommand {
  return {
    name: 'kube-apiserver',
    binary: 'kube-apiserver',
    args: [
      `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
      `--cert-dir=${credentials.certDir}`,
      `--secure-port=${ports.apiserver}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--allow-privileged=true',
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${credentials.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${credentials.serviceAccountKey}`,
      `--token-auth-file=${credentials.tokenFile}`,
      // No other apiserver instance shares this etcd, so there is no endpoint list for the `kubernetes` Service to keep.
      '--endpoint-reconciler-type=none',
      // kwok's Nodes also report their name as Hostname, which resolves nowhere; their kubelet is at 127.0.0.1.
      '--kubelet-preferred-address-types=InternalIP',
      '--profiling=false',
    ],
  };
}

export function controllerManagerCommand(ports: ClusterPorts, credentials: ClusterCredentials, kubeconfig: string): ComponentCommand {
  return {
    name: 'kube-controller-manager',
    binary: 'kube-controller-manager',
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      `--service-account-private-key-file=${credentials.serviceAccountKey}`,
      `--root-ca-file=${join(credentials.certDir, 'apiserver.crt')}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // Claims get volumes as on a real cluster (see storage.ts); the volumes are empty folders under /tmp.
      '--enable-hostpath-provisioner',
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.controllerManager}`,
      '--profiling=false',
    ],
  };
}

export function schedulerCommand(ports: ClusterPorts, kubeconfig: string): ComponentCommand {
  return {
    name: 'kube-scheduler',
    binary: 'kube-scheduler',
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.scheduler}`,
      '--profiling=false',
    ],
  };
}

/**
 * kwok plays the kubelets of the Nodes annotated `kwok.x-k8s.io/node: fake`, following the given stage files. Its
 * kubelet server (TLS with a certificate of its own, which the apiserver does not check without
 * --kubelet-certificate-authority) answers `kubectl logs` from the file a `Logs` object (kwok.x-k8s.io/v1alpha1,
 * named as the Pod) maps the container to, in the CRI log format a container runtime writes.
 */
export function kwokCommand(kubeconfig: string, stageFiles: readonly string[], kubeletPort: number): ComponentCommand {
  return {
    name: 'kwok',
    binary: 'kwok',
    args: [
      `--kubeconfig=${kubeconfig}`,
      ...stageFiles.map((file) => `--config=${file}`),
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      `--cidr=${POD_CIDR}`,
      '--node-ip=127.0.0.1',
      '--node-lease-duration-seconds=40',
      `--node-port=${kubeletPort}`,
      `--server-address=127.0.0.1:${kubeletPort}`,
      '--enable-crds=Logs',
    ],
  };
}
