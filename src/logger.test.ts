import { describe, expect, it } from 'vitest';
import { reconcileLogger } from './logger.ts';
import { capturedLogger } from './controller/test-support.ts';

describe('controller logs', () => {
  it('are JSON lines with level words, ISO timestamps and the reconcile fields', () => {
    const { log, lines } = capturedLogger('info');
    const first = reconcileLogger(log.child({ controller: 'kluctldeployments' }), { namespace: 'apps', name: 'web' });
    first.log.info({ revision: 'abc' }, 'deployed');
    first.log.debug('not written at level info');
    const second = reconcileLogger(log, { namespace: 'apps', name: 'web' });
    second.log.error({ err: new Error('boom') }, 'failed');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toEqual({
      level: 'info',
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      controller: 'kluctldeployments',
      namespace: 'apps',
      name: 'web',
      reconcileID: first.reconcileID,
      revision: 'abc',
      msg: 'deployed',
    });
    expect(first.reconcileID).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.reconcileID).not.toBe(first.reconcileID);
    expect(lines[1]).toMatchObject({ level: 'error', msg: 'failed', err: { type: 'Error', message: 'boom' } });
  });
});
