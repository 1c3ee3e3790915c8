/**
 * JOB gates run by the agent, as Plural's deployment-operator runs its PipelineGates: the server lists the JOB gates
 * of this cluster that wait for an outcome (each poll, and at once on a kick), the agent creates each gate's Job
 * (named per gate and context, so a restarted agent finds the one it made) and follows it until it finishes; a
 * Job that completes opens the gate, one that fails closes it with the Job's condition and the failing Pod's status.
 * Either way the end of each of its Pods' container logs goes with the outcome (the last 100 lines or 8 KiB of
 * each, 16 KiB in all, the newest kept), so "why did the check fail" is answered where the gate is shown.
 */
import type { AgentClient } from '../client/agent-client.ts';
import type { AgentGate } from '../api/agent.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import type { Logger } from '../logger.ts';
import { messageOf } from '../problems.ts';

const JOB = { group: 'batch', version: 'v1', kind: 'Job' };
const POD = { group: '', version: 'v1', kind: 'Pod' };
const LOG_TAIL_LINES = 100;
const LOG_BYTES_PER_CONTAINER = 8 * 1024;
/** GateReportSchema's maxLength for logs. */
const LOG_CHARS = 16 * 1024;
const GATE_LABEL = 'gantry.dev/pipeline-gate';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/**
 * The JOB gates one agent follows in its cluster: update() with each listing from the server, check() on each tick
 * (creates missing Jobs, reports finished ones; a failure of one gate is logged and retried on the next check). One
 * check at a time: it is not re-entrant. Jobs it made are left in the cluster; it holds nothing to close.
 */
export class GateJobs {
  readonly #cluster: Cluster;
  readonly #client: AgentClient;
  readonly #fieldManager: string;
  readonly #log: Logger;
  #gates: AgentGate[] = [];

  constructor(options: { cluster: Cluster; client: AgentClient; fieldManager: string; log: Logger }) {
    this.#cluster = options.cluster;
    this.#client = options.client;
    this.#fieldManager = options.fieldManager;
    this.#log = options.log;
  }

  /** The gates the server lists now; one it no longer lists (decided, superseded) is no longer followed. */
  update(gates: AgentGate[]): void {
    this.#gates = gates;
  }

  /** Whether any gate's Job is being followed. */
  following(): boolean {
    return this.#gates.length > 0;
  }

  /** Creates the Jobs not made yet, and reports those that finished. A gate's failure is logged, the rest go on. */
  async check(signal: AbortSignal): Promise<void> {
    for (const gate of [...this.#gates]) {
      if (signal.aborted) return;
      try {
        const job = (await this.#cluster.get({ ...JOB, namespace: gate.namespace, name: gate.jobName })) ?? (await this.#create(gate));
        const outcome = await this.#outcomeOf(job, gate);
        if (!outcome) continue;
        const logs = await this.#logsOf(gate, signal).catch((error: unknown) => `(no logs: ${messageOf(error)})`);
        await this.#client.reportGate({ ...gateKey(gate), ...outcome, logs }, signal).catch((error: { status?: number }) => {
          // 409: the gate moved on to a newer context; this outcome no longer counts.
          if (error.status !== 409) throw error;
        });
        this.#gates = this.#gates.filter((candidate) => candidate !== gate);
        this.#log.info({ gate: gate.gate, job: gate.jobName, state: outcome.state }, 'gate job finished');
      } catch (error) {
        if (!signal.aborted) this.#log.warn({ gate: gate.gate, error: (error as Error).message }, 'gate job not followed');
      }
    }
  }

  async #create(gate: AgentGate): Promise<KubeObject> {
    await this.#cluster.apply(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: gate.namespace } },
      { fieldManager: this.#fieldManager },
    );
    this.#log.info({ gate: gate.gate, job: gate.jobName, namespace: gate.namespace }, 'gate job created');
    return await this.#cluster.create(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: gate.jobName, namespace: gate.namespace, labels: { [GATE_LABEL]: gate.gate } },
        spec: gate.spec,
      },
      { fieldManager: this.#fieldManager },
    );
  }

  /** OPEN when the Job completed, CLOSED with why when it failed, undefined while it runs. */
  async #outcomeOf(job: KubeObject, gate: AgentGate): Promise<{ state: 'OPEN' | 'CLOSED'; reason: string } | undefined> {
    const conditions = ((job['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? []).filter((c) => c.status === 'True');
    if (conditions.some((condition) => condition.type === 'Complete')) return { state: 'OPEN', reason: `job ${gate.jobName} completed` };
    const failed = conditions.find((condition) => condition.type === 'Failed');
    if (!failed) return undefined;
    const pods = await this.#failedPods(gate);
    const why = [failed.reason, failed.message].filter(Boolean).join(': ');
    return { state: 'CLOSED', reason: [`job ${gate.jobName} failed${why ? ` (${why})` : ''}`, ...pods].join('; ') };
  }

  /**
   * The end of each container log of the Job's Pods, each under a `==> pod/container <==` line (as tail prints
   * several files); a log that cannot be read says why instead. At most LOG_CHARS, the newest kept.
   */
  async #logsOf(gate: AgentGate, signal: AbortSignal): Promise<string> {
    const resource = await this.#cluster.resourceFor(POD);
    const pods = await this.#cluster.list(resource, `job-name=${gate.jobName}`, gate.namespace);
    // A Job past its deadline has its Pods deleted by the job controller.
    if (pods.length === 0) return `(no Pod of job ${gate.jobName} is left to read a log from)`;
    const parts: string[] = [];
    for (const pod of pods.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))) {
      const name = pod.metadata.name ?? '';
      const containers = ((pod['spec'] as { containers?: Array<{ name: string }> } | undefined)?.containers ?? []).map((c) => c.name);
      for (const container of containers) {
        const text = await this.#containerLog(gate.namespace, name, container, signal).catch(
          (error: unknown) => `(no log: ${messageOf(error)})`,
        );
        parts.push(`==> ${name}/${container} <==\n${text.trimEnd()}`);
      }
    }
    const logs = parts.join('\n');
    return logs.length > LOG_CHARS ? logs.slice(logs.length - LOG_CHARS) : logs;
  }

  async #containerLog(namespace: string, pod: string, container: string, signal: AbortSignal): Promise<string> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log`;
    const query = { container, tailLines: String(LOG_TAIL_LINES), limitBytes: String(LOG_BYTES_PER_CONTAINER) };
    const body = await this.#cluster.client.stream(path, { query, signal });
    let text = '';
    for await (const chunk of body) text += String(chunk);
    return text;
  }

  /** Each failed Pod of the Job: its terminated containers' reasons, exit codes and messages. */
  async #failedPods(gate: AgentGate): Promise<string[]> {
    const resource = await this.#cluster.resourceFor(POD);
    const pods = await this.#cluster.list(resource, `job-name=${gate.jobName}`, gate.namespace);
    return pods
      .filter((pod) => (pod['status'] as { phase?: string } | undefined)?.phase === 'Failed')
      .map((pod) => {
        const statuses = (pod['status'] as { containerStatuses?: ContainerStatus[] }).containerStatuses ?? [];
        const terminated = statuses.flatMap((status) => {
          const state = status.state?.terminated;
          return state
            ? [`${status.name}: ${state.reason ?? 'terminated'} (exit ${state.exitCode})${state.message ? ` ${state.message}` : ''}`]
            : [];
        });
        return `pod ${pod.metadata.name}: ${terminated.join(', ') || 'failed'}`;
      });
  }
}

interface ContainerStatus {
  name: string;
  state?: { terminated?: { exitCode: number; reason?: string; message?: string } };
}

function gateKey(gate: AgentGate) {
  return { pipeline: gate.pipeline, from: gate.from, to: gate.to, gate: gate.gate, contextId: gate.contextId };
}
