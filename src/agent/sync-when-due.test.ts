/** A service's own resync interval (Plural's reconciliation.interval): used over the agent's, never under a minute. */
import { describe, expect, it } from 'vitest';
import { resyncIntervalOf } from './sync-when-due.ts';

describe('resyncIntervalOf', () => {
  const AGENT_MS = 600_000;
  it("takes the service's syncConfig.resyncInterval, else the agent's", () => {
    expect(resyncIntervalOf({ syncConfig: { resyncInterval: '45m' } }, AGENT_MS)).toBe(45 * 60_000);
    expect(resyncIntervalOf({ syncConfig: { selfHeal: true } }, AGENT_MS)).toBe(AGENT_MS);
    expect(resyncIntervalOf({}, AGENT_MS)).toBe(AGENT_MS);
  });

  it('raises an interval under a minute to one: a careless 1ms would have the agent apply all the time', () => {
    expect(resyncIntervalOf({ syncConfig: { resyncInterval: '1ms' } }, AGENT_MS)).toBe(60_000);
    expect(resyncIntervalOf({ syncConfig: { resyncInterval: '0' } }, AGENT_MS)).toBe(60_000);
  });
});
