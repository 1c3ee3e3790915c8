/**
 * What the Live tables say of an object's state, for the kinds that have one to say: a pod's phase, readiness and
 * restarts; a workload's ready replicas; a job's completions. Other kinds have none.
 */
import type { HealthView } from '../health.ts';
import type { KubeObject } from '../kube/kube-object.ts';

interface PodStatus {
  phase?: string;
  containerStatuses?: { ready?: boolean; restartCount?: number }[];
}

export function objectStatus(object: KubeObject): HealthView | undefined {
  const status = (object['status'] ?? {}) as Record<string, unknown>;
  const spec = (object['spec'] ?? {}) as Record<string, unknown>;
  switch (object.kind) {
    case 'Pod':
      return podStatus(status as PodStatus, ((spec['containers'] as unknown[] | undefined) ?? []).length);
    case 'Deployment':
    case 'StatefulSet':
    case 'ReplicaSet':
      return replicas(Number(status['readyReplicas'] ?? 0), Number(spec['replicas'] ?? 1));
    case 'DaemonSet':
      return replicas(Number(status['numberReady'] ?? 0), Number(status['desiredNumberScheduled'] ?? 0));
    case 'Job': {
      const done = Number(status['succeeded'] ?? 0);
      const wanted = Number(spec['completions'] ?? 1);
      if (Number(status['failed'] ?? 0) > 0 && done < wanted)
        return { health: 'Degraded', label: 'Failed', detail: `${done}/${wanted} completed` };
      return done >= wanted
        ? { health: 'Healthy', label: 'Complete', detail: `${done}/${wanted} completed` }
        : { health: 'Progressing', label: `${done}/${wanted}`, detail: 'running' };
    }
    default:
      return undefined;
  }
}

function podStatus(status: PodStatus, containers: number): HealthView {
  const statuses = status.containerStatuses ?? [];
  const ready = statuses.filter((container) => container.ready).length;
  const restarts = statuses.reduce((sum, container) => sum + (container.restartCount ?? 0), 0);
  const detail = `${ready}/${containers} containers ready, ${restarts} restart(s)`;
  switch (status.phase) {
    case 'Running':
      return { health: ready === containers ? 'Healthy' : 'Progressing', label: `Running ${ready}/${containers}`, detail };
    case 'Succeeded':
      return { health: 'Healthy', label: 'Completed', detail };
    case 'Failed':
      return { health: 'Degraded', label: 'Failed', detail };
    case 'Pending':
      return { health: 'Progressing', label: 'Pending', detail };
    default:
      return { health: 'Unknown', label: status.phase ?? 'Unknown', detail };
  }
}

function replicas(ready: number, wanted: number): HealthView {
  return {
    health: ready >= wanted ? 'Healthy' : 'Progressing',
    label: `${ready}/${wanted} ready`,
    detail: `${ready} of ${wanted} replicas ready`,
  };
}
