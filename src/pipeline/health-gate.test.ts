/**
 * HEALTH gates without a query, over injected instants: soaking until the soak ends, then open; closed when a
 * service is not healthy; bad specs named by field. The query against a real Prometheus is in the pipelines e2e test.
 */
import { describe, expect, test } from 'vitest';
import { checkHealth, healthProblem } from './health-gate.ts';

const since = new Date('2026-11-25T10:00:00Z');
const at = (seconds: number) => new Date(since.getTime() + seconds * 1000);

describe('checkHealth', () => {
  test('pending while soaking, checked again at the interval and at the soak’s end; open from the end on', async () => {
    const spec = { soak: '1m', interval: '25s' };
    expect(await checkHealth(spec, since, at(10), [])).toEqual({
      state: 'PENDING',
      reason: 'soaking until 2026-11-25T10:01:00.000Z',
      checkAt: at(35),
    });
    expect((await checkHealth(spec, since, at(50), [])).checkAt).toEqual(at(60));
    expect(await checkHealth(spec, since, at(60), [])).toEqual({ state: 'OPEN', reason: 'healthy for 1m' });
  });

  test('a zero soak opens at the first check', async () => {
    expect((await checkHealth({ soak: '0' }, since, since, [])).state).toBe('OPEN');
  });

  test('a service not healthy closes the gate, naming it', async () => {
    expect(await checkHealth({ soak: '1m' }, since, at(5), [{ name: 'web', status: 'failed' }])).toEqual({
      state: 'CLOSED',
      reason: 'during the soak: web is failed',
    });
  });
});

describe('healthProblem', () => {
  test.each([
    [{ soak: '5 minutes' }, 'soak'],
    [{ soak: '5m', interval: '0' }, 'interval'],
    [{ soak: '5m', prometheus: { url: 'prometheus:9090', query: 'up' } }, 'prometheus.url'],
  ])('names the field of a bad spec: %j', (spec, field) => {
    expect(healthProblem(spec)?.field).toBe(field);
  });

  test('passes a good spec', () => {
    expect(healthProblem({ soak: '5m', interval: '10s', prometheus: { url: 'http://127.0.0.1:9090', query: 'up == 1' } })).toBeUndefined();
  });
});
