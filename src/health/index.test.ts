import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.ts';
import { readinessOf } from './index.ts';

function object(apiVersion: string, kind: string, fields: Record<string, unknown> = {}, annotations?: Record<string, string>): KubeObject {
  return { apiVersion, kind, metadata: { name: 'x', namespace: 'shop', generation: 1, annotations }, ...fields };
}

const pendingClaim = { status: { phase: 'Pending' } };

describe('readinessOf', () => {
  it('dispatches on group and kind, whatever the version', () => {
    expect(readinessOf(object('v1', 'PersistentVolumeClaim', pendingClaim)).message).toContain('Pending');
    expect(readinessOf(object('batch/v1', 'Job', { status: {} }))).toEqual({ status: 'InProgress', message: 'not started yet' });
    expect(readinessOf(object('apiregistration.k8s.io/v1beta1', 'APIService', { status: {} })).message).toBe(
      'waiting for the Available condition',
    );
  });

  it('reads kinds of other groups, and unknown kinds, by the generic rules', () => {
    // A Job of another group is not a batch Job: no startTime does not make it InProgress.
    expect(readinessOf(object('example.com/v1', 'Job', { status: {} })).status).toBe('Ready');
    expect(readinessOf(object('example.com/v1', 'constructor', { status: {} })).status).toBe('Ready');
  });

  describe('kluctl.io/is-ready annotation', () => {
    it.each(['true', 'True', 'TRUE', 't', 'T', '1'])('%s overrides the rules with Ready', (value) => {
      const readiness = readinessOf(object('v1', 'PersistentVolumeClaim', pendingClaim, { 'kluctl.io/is-ready': value }));
      expect(readiness).toEqual({ status: 'Ready', message: 'kluctl.io/is-ready annotation is true' });
    });

    it.each(['false', 'False', 'FALSE', 'f', 'F', '0'])('%s overrides the rules with InProgress', (value) => {
      const complete = { status: { conditions: [{ type: 'Complete', status: 'True' }] } };
      const job = object('batch/v1', 'Job', complete, { 'kluctl.io/is-ready': value });
      expect(readinessOf(job)).toEqual({ status: 'InProgress', message: 'kluctl.io/is-ready annotation is false' });
    });

    it.each(['yes', 'on', '', ' true'])('%j is no Go boolean and is ignored, as Kluctl ignores it', (value) => {
      const readiness = readinessOf(object('v1', 'PersistentVolumeClaim', pendingClaim, { 'kluctl.io/is-ready': value }));
      expect(readiness.status).toBe('InProgress');
    });
  });

  it.each([
    ['apps/v1', 'Deployment'],
    ['apps/v1', 'StatefulSet'],
    ['apps/v1', 'DaemonSet'],
    ['apps/v1', 'ReplicaSet'],
    ['batch/v1', 'Job'],
    ['v1', 'Pod'],
    ['v1', 'PersistentVolumeClaim'],
    ['v1', 'Namespace'],
    ['v1', 'Service'],
    ['apiextensions.k8s.io/v1', 'CustomResourceDefinition'],
    ['apiregistration.k8s.io/v1', 'APIService'],
    ['example.com/v1', 'Widget'],
  ])('reads a malformed %s %s without throwing', (apiVersion, kind) => {
    const malformed = object(apiVersion, kind, {
      spec: { replicas: 'three', updateStrategy: 7, type: ['LoadBalancer'] },
      status: { conditions: 'Ready', replicas: '3', phase: 1, containerStatuses: [null, 'x'], loadBalancer: { ingress: [42] } },
    });
    expect(['Ready', 'InProgress', 'Failed']).toContain(readinessOf(malformed).status);
  });
});
