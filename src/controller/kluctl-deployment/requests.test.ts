import { describe, expect, it } from 'vitest';
import type { KluctlDeployment, KluctlDeploymentSpec } from '../../api/kluctl-deployment.ts';
import { overriddenSpec, pendingRequests, specProblems, specWithOverrides } from './requests.ts';

function deployment(annotations: Record<string, string>): KluctlDeployment {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'app', namespace: 'ns', annotations },
    spec: { interval: '5m', target: 'prod', args: { a: 1, b: { c: 2 } } },
  };
}

describe('pendingRequests', () => {
  it('serves diff, deploy, prune, validate before the full reconcile', () => {
    const requests = pendingRequests(
      deployment({
        'kluctl.io/request-reconcile': '{"requestValue":"r"}',
        'kluctl.io/request-validate': '{"requestValue":"v"}',
        'kluctl.io/request-deploy': '{"requestValue":"d"}',
        'kluctl.io/request-diff': '{"requestValue":"x"}',
        unrelated: 'value',
      }),
    );
    expect(requests.map((request) => request.kind)).toEqual(['diff', 'deploy', 'validate', 'reconcile']);
  });

  it('reads Kluctl JSON requests with overrides', () => {
    const [request] = pendingRequests(
      deployment({ 'kluctl.io/request-deploy': '{"requestValue":"2024","overridesPatch":{"dryRun":true}}' }),
    );
    expect(request?.request).toEqual({ requestValue: '2024', overridesPatch: { dryRun: true } });
  });

  it('takes any other value as a plain request (kubectl annotate)', () => {
    expect(pendingRequests(deployment({ 'kluctl.io/request-reconcile': '1732150000' }))[0]?.request).toEqual({
      requestValue: '1732150000',
    });
    expect(pendingRequests(deployment({ 'kluctl.io/request-reconcile': '{"other":1}' }))[0]?.request).toEqual({
      requestValue: '{"other":1}',
    });
  });

  it('ignores empty annotations', () => {
    expect(pendingRequests(deployment({ 'kluctl.io/request-reconcile': '' }))).toEqual([]);
  });
});

describe('specWithOverrides', () => {
  const { spec } = deployment({});

  it('merges the patch as RFC 7386 does: objects recursively, null removes', () => {
    const patched = specWithOverrides(spec, {
      requestValue: 'x',
      overridesPatch: { target: 'test', args: { b: { c: null, d: 3 } }, dryRun: true },
    });
    expect(patched).toEqual({ interval: '5m', target: 'test', args: { a: 1, b: { d: 3 } }, dryRun: true });
    expect(spec.args).toEqual({ a: 1, b: { c: 2 } });
  });

  it('keeps the spec without a patch', () => {
    expect(specWithOverrides(spec, { requestValue: 'x' })).toBe(spec);
  });
});

describe('overriddenSpec', () => {
  const spec = { interval: '5m', target: 'prod', source: { git: { url: 'https://example.com/repo.git' } } } as KluctlDeploymentSpec;
  const request = (overridesPatch: Record<string, unknown>) => ({ requestValue: 'x', overridesPatch });

  it('runs a request with the spec its patch makes', () => {
    expect(specProblems(spec)).toEqual([]);
    expect(overriddenSpec(spec, request({ dryRun: true, args: { level: 2 } }))).toEqual({ ...spec, dryRun: true, args: { level: 2 } });
  });

  it('refuses a patch that makes an invalid spec, naming each field: the annotation never went through the CRD schema', () => {
    expect(() => overriddenSpec(spec, request({ timeout: 5, prune: 'yes' }))).toThrow(
      /^the request's overridesPatch makes an invalid spec: .*spec\.timeout: .*; .*spec\.prune: /,
    );
  });
});
