/**
 * A progressive rollout as the CLI shows it, for `gantry globalservice rollout`, `gantry pipeline rollout` and
 * `gantry agent upgrade`/`rollout`: its
 * state, each wave with its copies' states and revisions, and what it waits for.
 */
import type { ApiRollout } from '../api/rollouts.ts';

/** What pause, resume and abort do, for their commands' descriptions. */
export const rolloutActions = [
  ['pause', 'stop releasing further batches and waves'],
  ['resume', 'go on; copies that failed get a new deadline'],
  ['abort', 'stop for good: the copies it changed go back to the revision they ran'],
] as const;

/** What the rollout moves: the global service's name, `<pipeline>/<stage>`, or the agents (to their version). */
export function rolloutName(rollout: Pick<ApiRollout, 'globalService' | 'pipeline' | 'agentVersion'>): string {
  if (rollout.agentVersion !== null) return `the agents to ${rollout.agentVersion}`;
  return rollout.globalService ?? `${rollout.pipeline!.name}/${rollout.pipeline!.stage}`;
}

/** The rollout as text: its state, then each wave with its copies' states and revisions, then what it waits for. */
export function formatRollout(rollout: ApiRollout): string {
  const lines = [`rollout of ${rolloutName(rollout)} (${rollout.cause}): ${rollout.state}${rollout.reason ? `: ${rollout.reason}` : ''}`];
  rollout.waves.forEach((wave, index) => {
    const marker = index < rollout.wave ? 'done' : index === rollout.wave && rollout.state === 'RUNNING' ? 'under way' : 'waits';
    lines.push(`  wave ${wave} (${marker})`);
    for (const copy of rollout.copies.filter((candidate) => candidate.wave === index)) {
      const reason = copy.reason ? `: ${copy.reason}` : '';
      lines.push(
        `    ${copy.cluster}/${copy.service}: ${copy.state} rev ${copy.revision ?? '-'} (from ${copy.from}, batch ${copy.batch + 1})${reason}`,
      );
    }
  });
  for (const line of rollout.waitingFor) lines.push(`  waiting for: ${line}`);
  return `${lines.join('\n')}\n`;
}
