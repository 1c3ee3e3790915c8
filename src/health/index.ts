/**
 * Readiness of Kubernetes objects, read from the object alone as the API server returned it (with its status): one
 * pure function per kind with rules of its own, a generic kstatus-like reading of conditions for every other kind,
 * and Kluctl's `kluctl.io/is-ready` annotation above both. See README.md for the rules and their sources.
 */
import { splitApiVersion, type KubeObject } from '../kube/object.ts';
import { apiServiceReadiness } from './apiservice.ts';
import { capiClusterReadiness } from './capi-cluster.ts';
import { crdReadiness } from './crd.ts';
import { daemonSetReadiness } from './daemonset.ts';
import { deploymentReadiness } from './deployment.ts';
import { genericReadiness } from './generic.ts';
import { jobReadiness } from './job.ts';
import { namespaceReadiness } from './namespace.ts';
import { podReadiness } from './pod.ts';
import { pvcReadiness } from './pvc.ts';
import { replicaSetReadiness } from './replicaset.ts';
import { serviceReadiness } from './service.ts';
import { statefulSetReadiness } from './statefulset.ts';
import { inProgress, ready, type Readiness } from './types.ts';

export type { Readiness, ReadinessStatus } from './types.ts';

/** Rules by `group/Kind`, core kinds by `Kind` alone (kstatus' keys); a Map, so that no kind hits Object.prototype. */
const readinessByKind = new Map<string, (object: KubeObject) => Readiness>([
  ['apps/Deployment', deploymentReadiness],
  ['apps/StatefulSet', statefulSetReadiness],
  ['apps/DaemonSet', daemonSetReadiness],
  ['apps/ReplicaSet', replicaSetReadiness],
  ['batch/Job', jobReadiness],
  ['Pod', podReadiness],
  ['PersistentVolumeClaim', pvcReadiness],
  ['Namespace', namespaceReadiness],
  ['Service', serviceReadiness],
  ['apiextensions.k8s.io/CustomResourceDefinition', crdReadiness],
  ['apiregistration.k8s.io/APIService', apiServiceReadiness],
  ['cluster.x-k8s.io/Cluster', capiClusterReadiness],
]);

const isReadyAnnotation = 'kluctl.io/is-ready';

/**
 * The readiness of `object` as the API server returned it.
 * An `kluctl.io/is-ready` annotation overrides every rule, as Kluctl documents it ("if set to true, kluctl will
 * always consider this object as ready; if set to false, kluctl will always consider this object as not ready"), so
 * that something outside Gantry can decide; its value is read as Go's strconv.ParseBool reads it, and a value that
 * is no boolean is ignored, as Kluctl ignores it.
 * Otherwise the kind's own rules decide, by group and kind (any version), and the generic rules for other kinds.
 */
export function readinessOf(object: KubeObject): Readiness {
  const override = parseGoBool(object.metadata.annotations?.[isReadyAnnotation]);
  if (override === true) return ready(`${isReadyAnnotation} annotation is true`);
  if (override === false) return inProgress(`${isReadyAnnotation} annotation is false`);

  const { group } = splitApiVersion(object.apiVersion);
  const rules = readinessByKind.get(group ? `${group}/${object.kind}` : object.kind) ?? genericReadiness;
  return rules(object);
}

/** Go's strconv.ParseBool, which Kluctl reads boolean annotations with; undefined for anything else. */
function parseGoBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}
