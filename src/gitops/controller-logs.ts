/**
 * The controller's log, read as `kluctl gitops logs` reads kluctl-controller's (pkg/controllers/logs): the log of
 * every controller Pod (label app.kubernetes.io/name=gantry-controller in the controller's namespace) through the
 * API server's pods/log, one JSON object per line as src/logger.ts writes them, kept when they concern the selected
 * KluctlDeployments and reconcile. Lines that are not JSON (a crash's stack trace) are skipped, as kluctl skips them.
 * A controller running out of cluster has no Pods, so nothing to read here.
 */
import { createInterface } from 'node:readline';
import { KubeApiError } from '../kube/client.ts';
import type { Cluster } from '../kube/cluster.ts';
import { messageOf } from '../problems.ts';

/** The label install/ and the chart give the controller's Pods. */
export const CONTROLLER_POD_SELECTOR = 'app.kubernetes.io/name=gantry-controller';
/** Where install/ puts the controller; the chart's usual namespace too. */
export const DEFAULT_CONTROLLER_NAMESPACE = 'gantry-system';

/** One line of the controller's log: controller-runtime's JSON fields, and whatever else the line carries. */
export interface ControllerLogLine {
  level?: string;
  /** ISO 8601. */
  ts?: string;
  msg?: string;
  /** Of the KluctlDeployment a reconcile's lines concern. */
  namespace?: string;
  name?: string;
  reconcileID?: string;
  /** pino's serialized error, on lines about a failure. */
  err?: { message?: string };
  [field: string]: unknown;
}

export interface LogFilter {
  /** Only lines of these KluctlDeployments (`namespace/name`); every line, also those of none, when absent. */
  deployments?: ReadonlySet<string>;
  /** Only lines of this reconcile. */
  reconcileId?: string;
}

export interface ReadLogOptions {
  /** Lines logged at most this many seconds ago, then (with follow) every later one. */
  sinceSeconds: number;
  /** Keep reading as the Pods log more, until the signal fires, `until` matches or the Pods go away. */
  follow: boolean;
  filter: LogFilter;
  /** Stops reading every Pod's log after the first kept line for which it returns true (that line included). */
  until?: (line: ControllerLogLine) => boolean;
  signal?: AbortSignal;
}

/** A controller Pod, `namespace/name`. */
export interface ControllerPod {
  namespace: string;
  name: string;
}

/**
 * The controller's Pods in `namespace`, by name.
 * @throws KubeApiError when the Pods cannot be listed (no rights); a namespace that does not exist has none.
 */
export async function controllerPods(cluster: Cluster, namespace: string): Promise<ControllerPod[]> {
  const resource = await cluster.resourceFor({ group: '', version: 'v1', kind: 'Pod' });
  const pods = await cluster.list(resource, CONTROLLER_POD_SELECTOR, namespace);
  return pods.map((pod) => ({ namespace, name: pod.metadata.name ?? '' })).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Calls `onLine` with each kept line of the Pods' logs, Pod by Pod as lines arrive; resolves when every log ended.
 * A Pod deleted meanwhile just ends its log.
 * @throws Error naming the Pod when its log cannot be read; the signal's reason when it fired.
 */
export async function readControllerLogs(
  cluster: Cluster,
  pods: readonly ControllerPod[],
  options: ReadLogOptions,
  onLine: (line: ControllerLogLine) => void,
): Promise<void> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const keep = (line: ControllerLogLine) => {
    onLine(line);
    if (options.until?.(line)) stop.abort();
  };
  await Promise.all(pods.map((pod) => readPodLog(cluster, pod, options, signal, keep)));
  options.signal?.throwIfAborted();
}

async function readPodLog(
  cluster: Cluster,
  pod: ControllerPod,
  options: ReadLogOptions,
  signal: AbortSignal,
  keep: (line: ControllerLogLine) => void,
): Promise<void> {
  const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/log`;
  const query = { follow: String(options.follow), sinceSeconds: String(Math.max(1, Math.ceil(options.sinceSeconds))) };
  try {
    const body = await cluster.client.stream(path, { query, signal });
    const lines = createInterface({ input: body, crlfDelay: Infinity });
    // Stopping aborts the body after the loop below has left; its abort error then has no other listener.
    lines.on('error', () => undefined);
    for await (const text of lines) {
      const line = parseLine(text);
      if (line && matches(line, options.filter)) keep(line);
      if (signal.aborted) break;
    }
  } catch (error) {
    if (signal.aborted) return;
    if (error instanceof KubeApiError && error.status === 404) return;
    throw new Error(`cannot read the log of controller Pod ${pod.namespace}/${pod.name}: ${messageOf(error)}`);
  }
}

function parseLine(text: string): ControllerLogLine | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as ControllerLogLine) : undefined;
  } catch {
    return undefined;
  }
}

function matches(line: ControllerLogLine, filter: LogFilter): boolean {
  if (filter.deployments && !filter.deployments.has(`${line.namespace}/${line.name}`)) return false;
  return filter.reconcileId === undefined || line.reconcileID === filter.reconcileId;
}

/** A line as a person reads it: its message, with the error it reports and its level when above info. */
export function formatLogLine(line: ControllerLogLine, withTime: boolean): string {
  const level = line.level && line.level !== 'info' ? `${line.level}: ` : '';
  const error = line.err?.message ? `: ${line.err.message}` : '';
  return `${withTime && line.ts ? `${line.ts} ` : ''}${level}${line.msg ?? ''}${error}`;
}
