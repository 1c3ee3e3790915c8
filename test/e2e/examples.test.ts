/**
 * The other upstream examples render and deploy, and diff shows exactly an edit made to one manifest.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExample, example, removeCopy } from '../support/fixtures.ts';
import { gantry, gantryJson, kubectlJson, localContext, names } from '../support/cli.ts';

let context = '';
beforeAll(async () => {
  context = await localContext();
});

const examples = [
  { project: 'microservices-demo/1-basic-project', target: 'local', namespace: 'default', deployment: 'frontend' },
  { project: 'microservices-demo/2-helm-integration', target: 'local', namespace: 'default', statefulSet: 'cart-redis-node' },
  { project: 'simple', target: 'simple', namespace: 'simple-simple', deployment: 'nginx-deployment' },
  { project: 'simple-helm', target: 'simple-helm', namespace: 'simple-helm-simple-helm', deployment: 'nginx' },
];

describe.each(examples)('$project', { timeout: 600_000 }, ({ project, target, namespace, deployment, statefulSet }) => {
  const args = () => ['-t', target, '--project-dir', example(project), '--context', context];
  afterAll(async () => {
    await gantry(['delete', '-y', ...args()]);
  });

  it('renders', async () => {
    const run = await gantry(['render', ...args()]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/kind: (Deployment|StatefulSet)/);
  });

  it('deploys and becomes ready', async () => {
    const { code, result, stderr } = await gantryJson(['deploy', ...args(), '--timeout', '5m']);
    expect(result.errors, stderr).toEqual([]);
    expect(code).toBe(0);
    if (deployment) expect(names(result.newObjects)).toContain(`${namespace}/Deployment/${deployment}`);
    if (statefulSet) {
      const state = await kubectlJson<Record<string, any>>(['get', 'statefulset', statefulSet, '-n', namespace]);
      expect(state.status.readyReplicas).toBe(state.spec.replicas);
    }
  });
});

describe('diff', { timeout: 600_000 }, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await copyExample('simple');
  });
  afterAll(async () => {
    await gantry(['delete', '-y', '-t', 'simple', '--project-dir', dir, '--context', context]);
    await removeCopy(dir);
  });

  it('shows exactly the change made to one manifest', async () => {
    const args = ['-t', 'simple', '--project-dir', dir, '--context', context];
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    const manifest = path.join(dir, 'deployment/nginx/deploy.yml');
    await writeFile(manifest, (await readFile(manifest, 'utf8')).replace('replicas: 3', 'replicas: 2'));

    const { code, result } = await gantryJson(['diff', ...args]);
    expect(code).toBe(0);
    expect(result.newObjects).toEqual([]);
    expect(names(result.changedObjects)).toEqual(['simple-simple/Deployment/nginx-deployment']);
    const changedLines = (result.changedObjects[0]?.diff ?? '').split('\n').filter((line) => /^[+-][^+-]/.test(line));
    expect(changedLines).toEqual(['-  replicas: 3', '+  replicas: 2']);
    const live = await kubectlJson<Record<string, any>>(['get', 'deployment', 'nginx-deployment', '-n', 'simple-simple']);
    expect(live.spec.replicas).toBe(3);
  });
});
