import type { KubeObject } from '../../src/kube/object.ts';

/** Names of the fake nodes `up` creates. Two, so spreading and anti-affinity have somewhere to go. */
export const NODE_NAMES = ['kwok-node-0', 'kwok-node-1'];

/**
 * A Node that kwok manages (annotation `kwok.x-k8s.io/node: fake`) with room for plenty of pods. It carries no
 * NoSchedule taint, so ordinary workloads land on it without tolerations.
 */
export function kwokNode(name: string): KubeObject {
  const resources = { cpu: '32', memory: '256Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node-role.kubernetes.io/agent': '',
        type: 'kwok',
      },
    },
    spec: {},
    // Nodes are the one kind whose status is taken on create; kwok's node-initialize stage keeps these values.
    status: { allocatable: resources, capacity: resources },
  };
}
