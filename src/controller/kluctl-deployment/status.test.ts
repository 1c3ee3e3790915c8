import { describe, expect, it } from 'vitest';
import type { CommandResult } from '../../deploy/result.ts';
import { driftMessage, driftOf, resultMessage, summarize } from './status.ts';

const commandInfo = {
  command: 'deploy',
  startTime: '2026-11-20T12:00:00Z',
  endTime: '2026-11-20T12:00:05Z',
  target: 'prod',
  discriminator: 'd',
};
const ref = (kind: string, name: string) => ({ group: '', version: 'v1', kind, namespace: 'ns', name });

function result(partial: Partial<CommandResult>): CommandResult {
  return {
    newObjects: [],
    changedObjects: [],
    deletedObjects: [],
    orphanObjects: [],
    appliedHooks: [],
    warnings: [],
    errors: [],
    ...partial,
  } as CommandResult;
}

describe('result summaries', () => {
  it('counts objects and names the object of each error', () => {
    const summary = summarize(
      result({
        newObjects: [ref('ConfigMap', 'a')],
        deletedObjects: [ref('Secret', 'b')],
        errors: [{ object: ref('ConfigMap', 'c'), message: 'refused' }],
      }),
      { id: 'r1', commandInfo, objectsHash: 'h', revision: 'abc' },
    );
    expect(summary).toMatchObject({ id: 'r1', newObjects: 1, changedObjects: 0, deletedObjects: 1, errors: ['ns/ConfigMap/c: refused'] });
    expect(resultMessage('deploy', summary)).toBe(
      'deploy: 1 new, 0 changed, 1 deleted, 0 orphan object(s), 1 error(s): ns/ConfigMap/c: refused',
    );
  });

  it('reports changed and missing objects as drift', () => {
    const drift = driftOf(
      result({ changedObjects: [{ ...ref('Deployment', 'web'), diff: '-1\n+3' }], newObjects: [ref('ConfigMap', 'gone')] }),
      { id: '', commandInfo },
    );
    expect(drift.objects).toEqual([ref('Deployment', 'web'), ref('ConfigMap', 'gone')]);
    expect(driftMessage(drift)).toBe('2 object(s) drifted');
    expect(driftMessage(driftOf(result({}), { id: '', commandInfo }))).toBe('no drift');
  });
});
