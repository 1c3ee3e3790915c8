import { describe, expect, it } from 'vitest';
import type { KluctlDeployment, KluctlDeploymentSpec, KluctlDeploymentStatus, ResultSummary } from '../../api/kluctl-deployment.ts';
import { nextReconcileIn, retryIntervalMs, timeoutMs } from './timing.ts';

const NOW = Date.parse('2026-11-20T12:00:00Z');

function deployment(spec: Partial<KluctlDeploymentSpec>, status: KluctlDeploymentStatus = {}): KluctlDeployment {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'app', namespace: 'ns' },
    spec: { interval: '5m', ...spec },
    status,
  };
}

function endedAgo(ms: number): ResultSummary {
  const endTime = new Date(NOW - ms).toISOString();
  return {
    id: '',
    commandInfo: { command: 'deploy', startTime: endTime, endTime, target: 'default', discriminator: 'd' },
    objectsHash: '',
    revision: '',
    newObjects: 0,
    changedObjects: 0,
    deletedObjects: 0,
    orphanObjects: 0,
    appliedHooks: 0,
    errors: [],
    warnings: [],
  };
}

describe('timing of a KluctlDeployment, as Kluctl computes it', () => {
  it('reconciles again after interval', () => {
    expect(nextReconcileIn(deployment({ interval: '10m' }), NOW)).toBe(600_000);
  });

  it('comes back earlier when a periodic deploy is due first', () => {
    const due = deployment({ interval: '10m', deployInterval: '3m', validateInterval: 'never' }, { lastDeployResult: endedAgo(60_000) });
    expect(nextReconcileIn(due, NOW)).toBe(120_000);
  });

  it('validates every validateInterval, default interval', () => {
    expect(nextReconcileIn(deployment({ interval: '10m', validateInterval: '1m' }, { lastValidateResult: endedAgo(30_000) }), NOW)).toBe(
      30_000,
    );
    expect(nextReconcileIn(deployment({ interval: '10m' }, { lastValidateResult: endedAgo(9 * 60_000) }), NOW)).toBe(60_000);
  });

  it('never returns a negative delay for an overdue deploy', () => {
    expect(nextReconcileIn(deployment({ deployInterval: '1m' }, { lastDeployResult: endedAgo(3_600_000) }), NOW)).toBe(0);
  });

  it('ignores deployInterval and validateInterval while suspended', () => {
    expect(
      nextReconcileIn(
        deployment(
          { suspend: true, deployInterval: '1m', validateInterval: '1m' },
          { lastDeployResult: endedAgo(0), lastValidateResult: endedAgo(0) },
        ),
        NOW,
      ),
    ).toBe(300_000);
  });

  it('retries after retryInterval, default interval', () => {
    expect(retryIntervalMs({ interval: '5m', retryInterval: '30s' })).toBe(30_000);
    expect(retryIntervalMs({ interval: '5m' })).toBe(300_000);
  });

  it('schedules nothing for a zero interval, as controller-runtime treats a zero RequeueAfter', () => {
    expect(nextReconcileIn(deployment({ interval: '0' }), NOW)).toBeUndefined();
    expect(nextReconcileIn(deployment({ interval: '0s', deployInterval: '1m' }, { lastDeployResult: endedAgo(0) }), NOW)).toBe(60_000);
    expect(retryIntervalMs({ interval: '5m', retryInterval: '0' })).toBeUndefined();
    expect(retryIntervalMs({ interval: '0' })).toBeUndefined();
  });

  it('limits a reconcile by timeout, else deployInterval, else interval, at least 30 s', () => {
    expect(timeoutMs({ interval: '5m', timeout: '2m' })).toBe(120_000);
    expect(timeoutMs({ interval: '5m', deployInterval: '10m' })).toBe(600_000);
    expect(timeoutMs({ interval: '5m', deployInterval: 'never' })).toBe(300_000);
    expect(timeoutMs({ interval: '5s' })).toBe(30_000);
  });
});
