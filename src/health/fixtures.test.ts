/**
 * Every fixture under testdata/<kind>/ is an object as the API server returns it, headed by the readiness it must
 * get: `# expect: <status>` and, where the reason matters, `# message: <text the message must contain>`.
 * Each one goes through readinessOf, which must dispatch it to the rules of its directory.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.ts';
import { parseYaml } from '../yaml.ts';
import { apiServiceReadiness } from './apiservice.ts';
import { capiClusterReadiness } from './capi-cluster.ts';
import { crdReadiness } from './crd.ts';
import { daemonSetReadiness } from './daemonset.ts';
import { deploymentReadiness } from './deployment.ts';
import { genericReadiness } from './generic.ts';
import { readinessOf } from './index.ts';
import { jobReadiness } from './job.ts';
import { namespaceReadiness } from './namespace.ts';
import { podReadiness } from './pod.ts';
import { pvcReadiness } from './pvc.ts';
import { replicaSetReadiness } from './replicaset.ts';
import { serviceReadiness } from './service.ts';
import { statefulSetReadiness } from './statefulset.ts';
import type { Readiness } from './types.ts';

const rulesByDirectory: Record<string, (object: KubeObject) => Readiness> = {
  apiservice: apiServiceReadiness,
  'capi-cluster': capiClusterReadiness,
  crd: crdReadiness,
  daemonset: daemonSetReadiness,
  deployment: deploymentReadiness,
  generic: genericReadiness,
  job: jobReadiness,
  namespace: namespaceReadiness,
  pod: podReadiness,
  pvc: pvcReadiness,
  replicaset: replicaSetReadiness,
  service: serviceReadiness,
  statefulset: statefulSetReadiness,
};

const testdata = join(import.meta.dirname, 'testdata');

interface Fixture {
  file: string;
  object: KubeObject;
  status: string;
  message: string | undefined;
}

function loadFixture(directory: string, name: string): Fixture {
  const file = `${directory}/${name}`;
  const text = readFileSync(join(testdata, file), 'utf8');
  const header = (key: string) => new RegExp(`^# ${key}: (.*)$`, 'm').exec(text)?.[1];
  const status = header('expect');
  if (status === undefined) throw new Error(`${file}: no "# expect:" line`);
  return { file, object: parseYaml(text, file) as KubeObject, status, message: header('message') };
}

describe('readiness fixtures', () => {
  const directories = readdirSync(testdata).sort();

  it('has rules for every fixture directory', () => {
    expect(directories).toEqual(Object.keys(rulesByDirectory).sort());
  });

  for (const directory of directories) {
    const rules = rulesByDirectory[directory];
    const names = readdirSync(join(testdata, directory))
      .filter((name) => name.endsWith('.yaml'))
      .sort();
    describe(directory, () => {
      for (const name of names) {
        const fixture = loadFixture(directory, name);
        it(`${name} is ${fixture.status}`, () => {
          const readiness = readinessOf(fixture.object);
          expect(readiness).toEqual(rules?.(fixture.object));
          expect(readiness.status).toBe(fixture.status);
          if (fixture.message !== undefined) expect(readiness.message).toContain(fixture.message);
        });
      }
    });
  }
});
