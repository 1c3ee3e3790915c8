/**
 * Fuzzing the KluctlDeployment spec validation (src/api/kluctl-deployment.ts, checked by the controller in
 * reconciler.ts before any work) and what the controller reads from an object before it runs anything: the manual
 * request annotations (requests.ts) and the schedule (timing.ts). Inputs are arbitrary JSON, valid specs, and valid
 * specs with fields replaced, removed, added or stretched. Every case ends in a spec the controller can schedule or
 * in problems that each name the field; nothing throws. Budgets and seed replay: support/fuzz.ts.
 */
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { KluctlDeploymentSpecSchema, REQUEST_ANNOTATIONS, type KluctlDeployment } from '../../src/api/kluctl-deployment.ts';
import { pendingRequests, specWithOverrides } from '../../src/controller/kluctl-deployment/requests.ts';
import { intervalMs, nextReconcileIn, retryIntervalMs, timeoutMs } from '../../src/controller/kluctl-deployment/timing.ts';
import { fuzz, testTimeout, type Budget } from './support/fuzz.ts';

/** A validation taking longer than this is a hang (a pattern backtracking on a long string, say). */
const VALIDATION_LIMIT_MS = 5_000;

/** The controller's check, as Reconciliation.run words it: `spec.<path>: <message>` per problem. */
function specProblems(spec: unknown): string[] {
  return [...Value.Errors(KluctlDeploymentSpecSchema, spec)].map(
    (error) => `spec${error.instancePath.replaceAll('/', '.')}: ${error.message}`,
  );
}

const number = fc.oneof(fc.nat({ max: 1_000 }).map(String), fc.constantFrom('1.5', '.5', '0.', '007', '9'.repeat(400)));
const duration = fc.oneof(
  fc.constant('0'),
  fc
    .array(fc.tuple(number, fc.constantFrom('ns', 'us', 'µs', 'μs', 'ms', 's', 'm', 'h')), { minLength: 1, maxLength: 4 })
    .map((parts) => parts.map(([value, unit]) => value + unit).join('')),
);
const safeDuration = fc.oneof(duration, fc.constant('never'));
const name = fc.oneof(fc.constantFrom('a', 'prod', 'x-1'), fc.string({ minLength: 1, maxLength: 63 }));
const names = fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 });

const gitRef = fc.oneof(
  fc.record({ branch: fc.string() }),
  fc.record({ tag: fc.string() }),
  fc.record({ commit: fc.stringMatching(/^[0-9a-f]{40}$/) }),
  fc.record({ semver: fc.constantFrom('>=1.0.0', '^2', '*') }),
);

const validSpec = fc.record(
  {
    interval: duration,
    retryInterval: duration,
    deployInterval: safeDuration,
    validateInterval: safeDuration,
    timeout: duration,
    source: fc.record(
      {
        git: fc.record(
          { url: fc.constantFrom('https://example.com/r.git', 'ssh://git@h/r'), ref: gitRef, path: fc.string() },
          { requiredKeys: ['url'] },
        ),
      },
      { requiredKeys: ['git'] },
    ),
    target: name,
    targetNameOverride: name,
    context: fc.string(),
    args: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    images: fc.array(fc.record({ image: fc.string(), resultImage: fc.string() }), { maxLength: 2 }),
    includeTags: names,
    excludeTags: names,
    includeDeploymentDirs: names,
    excludeDeploymentDirs: names,
    deployMode: fc.constantFrom('full-deploy', 'poke-images'),
    suspend: fc.boolean(),
    validate: fc.boolean(),
    prune: fc.boolean(),
    delete: fc.boolean(),
    manual: fc.boolean(),
    dependsOn: fc.array(fc.record({ name: fc.string(), namespace: fc.string() }, { requiredKeys: ['name'] }), { maxLength: 2 }),
  },
  { requiredKeys: ['interval'] },
);

const longStrings = fc.constantFrom(
  '1'.repeat(50_000) + 'x',
  '1m'.repeat(20_000) + 'x',
  '.'.repeat(50_000),
  'never'.repeat(1_000),
  '1h' + 'μ'.repeat(10_000),
);

/** Values that stress validation: wrong kinds, long and odd strings, deep nesting, prototype keys. */
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  longStrings,
  fc.integer({ min: 1, max: 5_000 }).map((depth) => JSON.parse('['.repeat(depth) + ']'.repeat(depth)) as unknown),
  fc.constant(JSON.parse('{"__proto__": {"interval": "1s"}, "constructor": {"prototype": {"x": 1}}}') as unknown),
);

/** What an annotation's JSON can carry (JSON.stringify itself overflows on the deepest nesting above). */
const patchValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }), longStrings);

const SPEC_KEYS = [
  'interval',
  'retryInterval',
  'deployInterval',
  'timeout',
  'source',
  'target',
  'args',
  'images',
  'includeTags',
  'deployMode',
  'suspend',
  'dependsOn',
  'unknown',
];

/** A valid spec with some fields replaced by odd values, removed, or added. */
const mutatedSpec = fc
  .tuple(
    validSpec,
    fc.array(fc.tuple(fc.constantFrom(...SPEC_KEYS), fc.option(oddValue, { nil: undefined })), { minLength: 1, maxLength: 3 }),
  )
  .map(([spec, changes]) => {
    const mutated: Record<string, unknown> = { ...spec };
    for (const [key, value] of changes) {
      if (value === undefined) delete mutated[key];
      else Object.defineProperty(mutated, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return mutated;
  });

const anySpec = fc.oneof(validSpec, mutatedSpec, oddValue);

/** What the controller does with a spec once it passed: schedule it (every helper must give a usable number). */
function expectSchedulable(spec: KluctlDeployment['spec']): void {
  const deployment: KluctlDeployment = {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'x', namespace: 'y' },
    spec,
  };
  for (const ms of [intervalMs(spec), retryIntervalMs(spec), timeoutMs(spec), nextReconcileIn(deployment, Date.now())]) {
    if (ms !== undefined) expect(ms >= 0, String(ms)).toBe(true);
  }
}

function expectValidOrNamed(spec: unknown): void {
  const started = performance.now();
  const problems = specProblems(spec);
  expect(performance.now() - started).toBeLessThan(VALIDATION_LIMIT_MS);
  expect(Value.Check(KluctlDeploymentSpecSchema, spec)).toBe(problems.length === 0);
  if (problems.length === 0) expectSchedulable(spec as KluctlDeployment['spec']);
  for (const problem of problems) expect(problem).toMatch(/^spec(\.[^:]+)*: \S/);
}

const SPECS: Budget = { runs: 3_000, ms: 6_000 };
const REQUESTS: Budget = { runs: 3_000, ms: 5_000 };

describe('KluctlDeployment spec', () => {
  it(
    'validates any value into a spec the controller can schedule, or problems naming each field',
    () =>
      fuzz(
        'kluctl-deployment/spec',
        fc.property(anySpec, (spec) => expectValidOrNamed(spec)),
        SPECS,
      ),
    testTimeout(SPECS),
  );

  it(
    'reads request annotations of any value, and validates the spec their overrides make',
    () =>
      fuzz(
        'kluctl-deployment/requests',
        fc.property(
          validSpec,
          fc.dictionary(
            fc.constantFrom(...Object.values(REQUEST_ANNOTATIONS), 'other'),
            fc.oneof(
              fc.string(),
              fc
                .record({
                  requestValue: fc.oneof(fc.string(), fc.jsonValue()),
                  overridesPatch: fc.oneof(fc.dictionary(fc.constantFrom(...SPEC_KEYS), patchValue), patchValue),
                })
                .map((request) => JSON.stringify(request)),
            ),
          ),
          (spec, annotations) => {
            const deployment: KluctlDeployment = {
              apiVersion: 'gitops.gantry.dev/v1beta1',
              kind: 'KluctlDeployment',
              metadata: { name: 'x', namespace: 'y', annotations },
              spec,
            };
            for (const request of pendingRequests(deployment)) {
              expect(typeof request.request.requestValue).toBe('string');
              expectValidOrNamed(specWithOverrides(spec, request.request));
            }
          },
        ),
        REQUESTS,
      ),
    testTimeout(REQUESTS),
  );
});
