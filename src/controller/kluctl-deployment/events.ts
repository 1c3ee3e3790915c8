/**
 * Kubernetes Events about KluctlDeployments (core/v1 Event, as client-go's recorder writes them), so
 * `kubectl describe kluctldeployment` and `kubectl get events` show deploys, prunes and failures. Recording never
 * fails a reconcile: an Event that cannot be written is logged and dropped.
 */
import type { KluctlDeployment } from '../../api/kluctl-deployment.ts';
import type { Cluster } from '../../kube/cluster.ts';
import type { KubeObject } from '../../kube/object.ts';

export type EventType = 'Normal' | 'Warning';

const MAX_MESSAGE = 1024;

/**
 * Writes Events about KluctlDeployments into `cluster`: each record() creates one new Event (count 1) in the
 * deployment's namespace, named `<deployment>.<random>`; unlike client-go's recorder it neither aggregates nor counts
 * repeats. A message is cut to MAX_MESSAGE (1024) characters. record() never rejects: write errors go to `onError`.
 */
export class EventRecorder {
  private readonly cluster: Cluster;
  private readonly component: string;
  private readonly fieldManager: string;
  private readonly onError: (error: unknown) => void;

  constructor(cluster: Cluster, options: { component: string; fieldManager: string; onError: (error: unknown) => void }) {
    this.cluster = cluster;
    this.component = options.component;
    this.fieldManager = options.fieldManager;
    this.onError = options.onError;
  }

  async record(deployment: KluctlDeployment, type: EventType, reason: string, message: string): Promise<void> {
    const now = new Date().toISOString();
    const { metadata } = deployment;
    const event: KubeObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${metadata.name}.`, namespace: metadata.namespace },
      involvedObject: {
        apiVersion: deployment.apiVersion,
        kind: deployment.kind,
        name: metadata.name,
        namespace: metadata.namespace,
        uid: metadata.uid,
        resourceVersion: metadata.resourceVersion,
      },
      type,
      reason,
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message,
      source: { component: this.component },
      reportingComponent: this.component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    await this.cluster.create(event, { fieldManager: this.fieldManager }).catch(this.onError);
  }
}
