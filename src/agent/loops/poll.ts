/**
 * The poll loop: every `pollIntervalMs` plus up to `jitterMs` (or at once when the push channel kicks it), lists the
 * cluster's services from the server, saves them as the desired state on disk, syncs each one that is due
 * (sync-when-due.ts) and sends its queued report, then lists the JOB gates for the gates loop. When the server
 * cannot be reached the services it listed last (or, after a restart, those on disk) are synced instead, and the
 * gates are left as they were.
 */
import type { AgentService } from '../../api/agent.ts';
import { type AgentState } from '../agent-state.ts';
import { sendPending } from '../reports.ts';
import type { Loop } from '../supervise.ts';
import { syncWhenDue } from '../sync-when-due.ts';
import { messageOf } from '../../problems.ts';

export function pollLoop(state: AgentState): Loop {
  return {
    name: 'poll',
    work: () => poll(state),
    wait: (ms) => state.pollWakeup.wait(ms, state.signal),
    interval: () => state.options.pollIntervalMs + Math.random() * state.options.jitterMs,
  };
}

async function poll(state: AgentState): Promise<void> {
  const { client, log } = state.options;
  const { signal } = state;
  const listed = await client.services(signal).catch((error: unknown) => {
    if (!signal.aborted) log.warn({ error: messageOf(error) }, 'cannot reach the server; keeping the last desired state');
    return undefined;
  });
  if (signal.aborted) return;
  if (listed) {
    state.known = listed;
    await state.desired.save(listed).catch((error: unknown) => log.warn({ error: messageOf(error) }, 'cannot save the desired state'));
  } else {
    state.known ??= await loadDesiredState(state);
  }
  for (const service of state.known ?? []) {
    if (signal.aborted) return;
    await syncWhenDue(state, service);
    await sendPending(state, service);
  }
  if (listed) {
    const gates = await client.gates(signal).catch((error: unknown) => {
      if (!signal.aborted) log.warn({ error: messageOf(error) }, 'cannot list the gate jobs');
      return undefined;
    });
    if (gates) state.gateJobs.update(gates);
    const previews = await client.previews(signal).catch((error: unknown) => {
      if (!signal.aborted) log.warn({ error: messageOf(error) }, 'cannot list the previews');
      return [];
    });
    if (previews.length > 0) {
      state.previews = previews;
      state.previewsWakeup.wake();
    }
    // The gates loop may be in a long wait from when no gate ran: it follows new Jobs from now on.
    if (state.gateJobs.following()) state.gatesWakeup.wake();
  }
}

/** What the agent knew before it restarted, so the cluster keeps its desired state while the server is away. */
async function loadDesiredState(state: AgentState): Promise<AgentService[]> {
  try {
    const services = (await state.desired.load()) ?? [];
    state.log.info({ services: services.length }, 'desired state read from disk');
    return services;
  } catch (error) {
    state.log.warn({ error: messageOf(error) }, 'the desired state on disk is not used');
    return [];
  }
}
