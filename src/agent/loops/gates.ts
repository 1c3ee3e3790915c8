/**
 * The gates loop: follows the Jobs of the pipeline JOB gates the last poll listed (gate-jobs.ts), every half second
 * while any is followed (a promotion waits on it, and each look is one GET), else every `healthIntervalMs`; a poll
 * that lists a gate to follow wakes it from the longer wait.
 */
import type { AgentState } from '../agent-state.ts';
import type { Loop } from '../supervise.ts';

/** How often the Jobs of running JOB gates are looked at: a promotion waits on it, and each look is one GET. */
const GATE_CHECK_MS = 500;

export function gatesLoop(state: AgentState): Loop {
  return {
    name: 'gates',
    work: () => state.gateJobs.check(state.signal),
    wait: (ms) => state.gatesWakeup.wait(ms, state.signal),
    interval: () => (state.gateJobs.following() ? GATE_CHECK_MS : state.options.healthIntervalMs),
  };
}
