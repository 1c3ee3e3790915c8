/**
 * JOB gates run by the agent, as Plural's deployment-operator runs its PipelineGates: the server lists the JOB gates
 * of this cluster that wait for an outcome (each poll, and at once on a kick), the agent creates each gate's Job
 * (named per gate and context, so a restarted agent finds the one it made) and follows it until it finishes; a
 * Job that completes opens the gate, one that fails closes it with the Job's condition and the failing Pod's status.
 */
import type { AgentClient } from '../client/agent-client.ts';
import type { AgentGate } from '../api/agent.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import type { Logger } from '../logger.ts';

const JOB = { group: 'batch', version: 'v1', kind: 'Job' };
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
        await this.#client.reportGate({ ...gateKey(gate), ...outcome }, signal).catch((error: { status?: number }) => {
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

  /** Each failed Pod of the Job: its terminated containers' reasons, exit codes and messages. */
  async #failedPods(gate: AgentGate): Promise<string[]> {
    const resource = await this.#cluster.resourceFor({ group: '', version: 'v1', kind: 'Pod' });
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
