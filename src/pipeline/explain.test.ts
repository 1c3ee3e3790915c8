/**
 * "Why not promoted yet", for each kind of blocker: a stage without context (naming the services not healthy), each
 * gate kind waiting, a closed gate with its reason, a timeout ahead, and a target pinned by a rollback.
 */
import { describe, expect, test } from 'vitest';
import { type EdgeFacts, waitingFor } from './explain.ts';

const context = { id: 'c2', createdAt: '2026-11-29T10:00:00.000Z' };
const facts = (overrides: Partial<EdgeFacts>): EdgeFacts => ({
  from: 'dev',
  context,
  promoted: false,
  sources: [{ cluster: 'dev', name: 'web', status: 'healthy' }],
  gates: [],
  targets: [{ cluster: 'prod', name: 'web', pinnedBy: null, pendingRevision: null }],
  ...overrides,
});
const gate = (spec: EdgeFacts['gates'][number]['spec'], row: Partial<EdgeFacts['gates'][number]> = {}): EdgeFacts['gates'][number] => ({
  spec,
  state: 'PENDING',
  contextId: 'c2',
  reason: null,
  decidedBy: null,
  updatedAt: '2026-11-29T10:00:01.000Z',
  ...row,
});

describe('waitingFor', () => {
  test('a stage without context names its services that are not healthy', () => {
    const sources = [
      { cluster: 'dev', name: 'web', status: 'healthy' },
      { cluster: 'dev', name: 'api', status: 'stale' },
      { cluster: 'dev', name: 'db', status: 'missing' },
    ];
    expect(waitingFor(facts({ context: undefined, sources }))).toEqual([
      'stage dev has no promotion context yet: dev/api is stale, dev/db is missing',
    ]);
  });

  test('each gate not open says what it waits for, with its timeout; open gates and a promoted edge say nothing', () => {
    const gates = [
      gate({ name: 'approval', type: 'APPROVAL', timeout: '2h' }),
      gate({ name: 'check', type: 'JOB' }, { job: { name: 'gate-0123', cluster: 'dev' } }),
      gate({ name: 'office-hours', type: 'WINDOW' }, { reason: 'outside every window; the next opens at 2026-11-30T08:00:00.000Z' }),
      gate({ name: 'soak', type: 'HEALTH' }, { state: 'OPEN' }),
      // Decided for an older context: PENDING for this one.
      gate({ name: 'second', type: 'APPROVAL' }, { state: 'OPEN', contextId: 'c1' }),
    ];
    expect(waitingFor(facts({ gates }))).toEqual([
      'APPROVAL gate approval: waits for an approver since 2026-11-29T10:00:01.000Z; times out at 2026-11-29T12:00:00.000Z',
      'JOB gate check: Job gate-0123 on cluster dev runs since 2026-11-29T10:00:01.000Z',
      'WINDOW gate office-hours: outside every window; the next opens at 2026-11-30T08:00:00.000Z',
      'APPROVAL gate second: waits for an approver since 2026-11-29T10:00:00.000Z',
    ]);
    expect(waitingFor(facts({ gates, promoted: true }))).toEqual([]);
    expect(waitingFor(facts({ gates: [gate({ name: 'approval', type: 'APPROVAL' }, { state: 'OPEN' })] }))).toEqual([
      'every gate is open: promoting',
    ]);
  });

  test('a closed gate says by whom and why, and what opens it', () => {
    const closed = gate({ name: 'approval', type: 'APPROVAL' }, { state: 'CLOSED', decidedBy: 'rita', reason: 'not on a Friday' });
    expect(waitingFor(facts({ gates: [closed] }))).toEqual([
      "APPROVAL gate approval is closed by rita: not on a Friday; a new context of stage dev or an admin's force opens it",
    ]);
  });

  test('a target pinned by a rollback holds what is promoted, before and after the promotion', () => {
    const targets = [{ cluster: 'prod', name: 'web', pinnedBy: 'paula', pendingRevision: 7 }];
    const line = 'prod/web is pinned by paula (a rollback): revision 7 waits until it is released';
    expect(waitingFor(facts({ targets, promoted: true }))).toEqual([line]);
    expect(waitingFor(facts({ targets, context: undefined }))).toEqual([expect.stringContaining('no promotion context'), line]);
  });

  test("a target held by a stage's rollout waits for its wave", () => {
    const targets = [{ cluster: 'prod', name: 'web', pinnedBy: 'rollout/release/prod', pendingRevision: 7 }];
    expect(waitingFor(facts({ targets, promoted: true }))).toEqual([
      'prod/web is held by rollout/release/prod: revision 7 waits for its wave, or, once that rollout failed, until it is released',
    ]);
  });
});
