import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/object.ts';
import { needsReconcile } from './predicates.ts';

function object(generation: number, annotations: Record<string, string> = {}, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'app', namespace: 'ns', generation, annotations, ...extra },
  } as KubeObject;
}

describe('needsReconcile', () => {
  it('reconciles a new generation', () => {
    expect(needsReconcile(object(2), object(1))).toBe(true);
  });

  it('ignores status and other metadata updates', () => {
    expect(needsReconcile(object(1, { note: 'b' }), object(1, { note: 'a' }))).toBe(false);
  });

  it('reconciles a request annotation that was added or changed, not one that was removed', () => {
    expect(needsReconcile(object(1, { 'kluctl.io/request-deploy': '1' }), object(1))).toBe(true);
    expect(needsReconcile(object(1, { 'kluctl.io/request-deploy': '2' }), object(1, { 'kluctl.io/request-deploy': '1' }))).toBe(true);
    expect(needsReconcile(object(1), object(1, { 'kluctl.io/request-deploy': '1' }))).toBe(false);
  });

  it('reconciles the start of a deletion', () => {
    expect(needsReconcile(object(1, {}, { deletionTimestamp: '2026-11-20T12:00:00Z' }), object(1))).toBe(true);
  });
});
