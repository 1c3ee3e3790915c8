/**
 * Drift verdicts on objects as the API server returns them: defaults and controllers' additions are no drift, an
 * edit of a manifest's field is (naming the field and the manager that made it), a normalized field is not.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.ts';
import { driftOf, expectationOf } from './drift.ts';

const manifest: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'web:1', resources: { limits: { cpu: 0.5 } } }] },
    },
  },
};

/** The apply's answer: defaults, the API server's spelling of the cpu, the agent's managed fields. */
function applied(): KubeObject {
  return {
    ...structuredClone(manifest),
    metadata: {
      ...structuredClone(manifest.metadata),
      uid: 'u1',
      resourceVersion: '10',
      managedFields: [
        {
          manager: 'gantry-agent',
          operation: 'Apply',
          fieldsV1: {
            'f:metadata': { 'f:labels': { 'f:app': {} } },
            'f:spec': {
              'f:replicas': {},
              'f:template': {
                'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {}, 'f:resources': {} } } },
              },
            },
          },
        },
      ],
    },
    spec: {
      replicas: 2,
      progressDeadlineSeconds: 600,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          restartPolicy: 'Always',
          containers: [{ name: 'web', image: 'web:1', imagePullPolicy: 'IfNotPresent', resources: { limits: { cpu: '500m' } } }],
        },
      },
    },
  };
}

describe('driftOf', () => {
  it('finds none in the live object the apply left, nor after controllers added status and annotations', () => {
    const live = applied();
    const expected = expectationOf(manifest, live, 'gantry-agent');
    expect(driftOf(expected, live, [], 'gantry-agent')).toBeUndefined();
    const later = { ...applied(), status: { readyReplicas: 2 } };
    later.metadata.annotations = { 'deployment.kubernetes.io/revision': '1' };
    expect(driftOf(expected, later, [], 'gantry-agent')).toBeUndefined();
  });

  it('reports a deleted object as MISSING', () => {
    expect(driftOf(expectationOf(manifest, applied(), 'gantry-agent'), undefined, [], 'gantry-agent')).toEqual({
      state: 'MISSING',
      fields: [],
      managers: [],
    });
  });

  it('names the fields an edit changed and the manager that owns them now', () => {
    const expected = expectationOf(manifest, applied(), 'gantry-agent');
    const edited = applied();
    (edited['spec'] as any).replicas = 5;
    (edited['spec'] as any).template.spec.containers[0].image = 'web:evil';
    edited.metadata.managedFields!.push({ manager: 'kubectl-edit', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } });
    expect(driftOf(expected, edited, [], 'gantry-agent')).toEqual({
      state: 'CHANGED',
      fields: ['spec.replicas', 'spec.template.spec.containers[0].image'],
      managers: ['kubectl-edit'],
    });
  });

  it('reports a removed label and a removed container as changed fields', () => {
    const expected = expectationOf(manifest, applied(), 'gantry-agent');
    const edited = applied();
    edited.metadata.labels = {};
    (edited['spec'] as any).template.spec.containers = [];
    expect(driftOf(expected, edited, [], 'gantry-agent')?.fields).toEqual(['metadata.labels.app', 'spec.template.spec.containers']);
  });

  it('leaves the fields of a matching diffNormalizer to the cluster', () => {
    const expected = expectationOf(manifest, applied(), 'gantry-agent');
    const scaled = applied();
    (scaled['spec'] as any).replicas = 7;
    const normalizers = [{ kind: 'Deployment', jsonPointers: ['/spec/replicas'] }];
    expect(driftOf(expected, scaled, normalizers, 'gantry-agent')).toBeUndefined();
    expect(driftOf(expected, scaled, [{ kind: 'StatefulSet', jsonPointers: ['/spec/replicas'] }], 'gantry-agent')?.fields).toEqual([
      'spec.replicas',
    ]);
  });

  it('reports the fields an apply gave up to another controller as a CONFLICT, and no longer compares them', () => {
    const taken = applied();
    (taken['spec'] as any).replicas = 3;
    const fields = taken.metadata.managedFields!;
    fields[0]!.fieldsV1 = { 'f:metadata': { 'f:labels': { 'f:app': {} } } };
    fields.push({ manager: 'autoscaler', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } });
    const expected = expectationOf(manifest, taken, 'gantry-agent');
    const conflict = { state: 'CONFLICT', fields: ['spec.replicas'], managers: ['autoscaler'] };
    expect(driftOf(expected, taken, [], 'gantry-agent')).toEqual(conflict);
    const scaledAgain = structuredClone(taken);
    (scaledAgain['spec'] as any).replicas = 9;
    expect(driftOf(expected, scaledAgain, [], 'gantry-agent')).toEqual(conflict);
    const edited = structuredClone(taken);
    edited.metadata.labels = { app: 'other' };
    expect(driftOf(expected, edited, [], 'gantry-agent')).toMatchObject({ state: 'CHANGED', fields: ['metadata.labels.app'] });
  });

  it('names at most 20 fields', () => {
    const many: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm' }, data: {} };
    for (let index = 0; index < 30; index++) (many['data'] as Record<string, string>)[`k${index}`] = 'a';
    const expected = expectationOf(many, many, 'gantry-agent');
    const changed = structuredClone(many);
    for (const key of Object.keys(changed['data'] as object)) (changed['data'] as Record<string, string>)[key] = 'b';
    expect(driftOf(expected, changed, [], 'gantry-agent')?.fields).toHaveLength(20);
  });
});
