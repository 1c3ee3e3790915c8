/**
 * The engine as a library, in this process against the local cluster: a target rendered by one engine, sent as JSON
 * and applied by another ("render here, apply there"); a deploy and a render cancelled half way; and the values of
 * sensitive vars masked in what a run shows (through the CLI, as a user sees it).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployTarget, type DeployOptions } from '../../src/deploy/deploy.ts';
import { prepareTarget } from '../../src/target/prepare.ts';
import type { TargetRequest } from '../../src/target/request.ts';
import { deleteTarget } from '../../src/deploy/prune.ts';
import { parseRenderedTarget, renderedTargetDigest, targetObjects } from '../../src/target/rendered-target.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { NO_SELECTION } from '../../src/project/inclusion.ts';
import type { Progress } from '../../src/progress.ts';
import { gantry, gantryJson, kubectl, kubectlJson, localContext } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';

const NS = `gantry-e2e-engine-${randomBytes(3).toString('hex')}`;
const quiet: Progress = { step: () => undefined };
const behaviour = {
  forceApply: false,
  replaceOnError: false,
  forceReplaceOnError: false,
  abortOnError: false,
  readinessTimeoutMs: 300_000,
};
const dirs: string[] = [];
const engines: Engine[] = [];

function newEngine(): Engine {
  const engine = new Engine(testConfig());
  engines.push(engine);
  return engine;
}

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject(files);
  dirs.push(dir);
  return dir;
}

function request(projectDir: string, overrides: Partial<TargetRequest> = {}): TargetRequest {
  return { projectDir, target: 'default', args: {}, inclusion: NO_SELECTION, fixedImages: [], ...overrides };
}

function deployOptions(engine: Engine, overrides: Partial<DeployOptions> = {}): DeployOptions {
  return {
    dryRun: false,
    prune: true,
    wait: true,
    timeoutMs: 300_000,
    behaviour,
    fieldManager: engine.config.fieldManager,
    progress: quiet,
    ...overrides,
  };
}

const configMap = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\ndata:\n  value: "${value}"\n`;

beforeAll(async () => {
  await kubectl(['create', 'namespace', NS]);
});
afterAll(async () => {
  for (const engine of engines) await engine.close();
  for (const dir of dirs) await removeCopy(dir);
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('a rendered target as data', { timeout: 120_000 }, () => {
  it('is rendered by one engine, sent as JSON, and applied by another', async () => {
    const dir = await project({
      '.kluctl.yaml': `discriminator: ${NS}-sent\ntargets:\n  - name: default\n`,
      'deployment.yaml': 'deployments:\n  - path: first\n  - barrier: true\n    message: first things first\n  - path: second\n',
      'first/cm.yaml': configMap('first', 'one'),
      'second/cm.yaml': configMap('second', '{{ args.greeting }}'),
    });
    const here = newEngine();
    const kubeConfig = loadKubeConfig();
    const renderedHere = await prepareTarget(request(dir, { args: { greeting: 'hello' } }), here, { kubeConfig, progress: quiet });
    const again = await prepareTarget(request(dir, { args: { greeting: 'hello' } }), here, { kubeConfig, progress: quiet });
    expect(renderedTargetDigest(again.rendered)).toBe(renderedTargetDigest(renderedHere.rendered));

    const sent = JSON.stringify(renderedHere.rendered);
    expect(sent).not.toContain(dir);
    const received = parseRenderedTarget(sent, 'the wire');
    expect(renderedTargetDigest(received)).toBe(renderedTargetDigest(renderedHere.rendered));
    expect(received.items.map((item) => [item.dir, item.barrier, item.message])).toEqual([
      ['first', false, undefined],
      [undefined, true, 'first things first'],
      ['second', false, undefined],
    ]);

    const there = newEngine();
    const result = await deployTarget(received, there.clusters.get(kubeConfig), deployOptions(there));
    expect(result.errors).toEqual([]);
    expect(result.newObjects.map((ref) => ref.name).sort()).toEqual(['first', 'second']);
    const live = await kubectlJson<{ data: { value: string } }>(['get', 'configmap', 'second', '-n', NS]);
    expect(live.data.value).toBe('hello');
    const deleted = await deleteTarget(received, there.clusters.get(kubeConfig), {
      dryRun: false,
      timeoutMs: 60_000,
      fieldManager: there.config.fieldManager,
      progress: quiet,
    });
    expect(deleted.deletedObjects.map((ref) => ref.name).sort()).toEqual(['first', 'second']);
  });

  it('is refused with the path of each wrong field', () => {
    expect(() => parseRenderedTarget('{"apiVersion":"gantry.dev/v1alpha1","kind":"RenderedTarget"}', 'target.json')).toThrow(
      /^target\.json: not a gantry\.dev\/v1alpha1 RenderedTarget: \/: .*target/,
    );
    expect(() => parseRenderedTarget('not json', 'target.json')).toThrow('target.json: not JSON');
  });
});

describe('cancellation', { timeout: 120_000 }, () => {
  it('stops a deploy waiting for readiness at once, and applies nothing after it', async () => {
    const dir = await project({
      '.kluctl.yaml': `discriminator: ${NS}-cancel\ntargets:\n  - name: default\n`,
      'deployment.yaml': 'deployments:\n  - path: stuck\n    waitReadiness: true\n  - barrier: true\n  - path: after\n',
      // No node has this label: the Deployment never becomes ready.
      'stuck/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: ${NS}}
spec:
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {gantry.dev/no-such-node: "true"}
      containers: [{name: app, image: nginx}]
`,
      'after/cm.yaml': configMap('after-the-barrier', 'x'),
    });
    const engine = newEngine();
    const kubeConfig = loadKubeConfig();
    const prepared = await prepareTarget(request(dir), engine, { kubeConfig, progress: quiet });
    const stop = new AbortController();
    let waiting: () => void = () => undefined;
    const isWaiting = new Promise<void>((resolve) => (waiting = resolve));
    const progress: Progress = { step: (scope, message) => scope === 'wait' && message.includes('not ready yet') && waiting() };
    const deploy = deployTarget(prepared.rendered, prepared.cluster!, deployOptions(engine, { progress, signal: stop.signal }));
    await isWaiting;
    const abortedAt = Date.now();
    stop.abort(new Error('leadership lost'));
    await expect(deploy).rejects.toThrow('leadership lost');
    // The bound: a poll of readiness under way is abandoned, so the deploy ends within one request's round trip.
    expect(Date.now() - abortedAt).toBeLessThan(1000);
    const configMaps = await kubectlJson(['get', 'configmaps', '-n', NS]);
    expect(configMaps.items.map((item) => item.metadata.name)).not.toContain('after-the-barrier');
  });

  it('stops a render when its signal fires, and renders nothing', async () => {
    const dir = await project({
      '.kluctl.yaml': 'targets:\n  - name: default\n',
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/cm.yaml': configMap('never', 'x'),
    });
    const stop = new AbortController();
    stop.abort(new Error('stopping'));
    await expect(prepareTarget(request(dir), newEngine(), { kubeConfig: undefined, progress: quiet, signal: stop.signal })).rejects.toThrow(
      'stopping',
    );
  });
});

describe('sensitive vars', { timeout: 120_000 }, () => {
  let dir = '';
  let args: string[] = [];
  const files = (password: string) => ({
    '.kluctl.yaml': `discriminator: ${NS}-sensitive\ntargets:\n  - name: default\n`,
    'deployment.yaml': `vars:\n  - values:\n      db:\n        password: ${password}\n    sensitive: true\ndeployments:\n  - path: app\n`,
    'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${NS}\ndata:\n  url: "postgres://app:{{ db.password }}@db"\n`,
  });

  beforeAll(async () => {
    dir = await project(files('first-password-value'));
    args = ['-t', 'default', '--project-dir', dir, '--context', await localContext()];
  });
  afterAll(async () => {
    await gantry(['delete', '-y', ...args]);
  });

  it('are masked in diffs, results and progress, never in what is applied', async () => {
    const deployed = await gantry(['deploy', ...args, '-o', 'json']);
    expect(deployed.code, deployed.stderr).toBe(0);
    const live = await kubectlJson<{ data: { url: string } }>(['get', 'configmap', 'settings', '-n', NS]);
    expect(live.data.url).toBe('postgres://app:first-password-value@db');

    await removeCopy(dir);
    const changed = await writeProject(files('second-password-value'));
    dirs.push(changed);
    const changedArgs = ['-t', 'default', '--project-dir', changed, '--context', await localContext()];
    const diff = await gantryJson(['diff', ...changedArgs]);
    const shown = JSON.stringify(diff.result) + diff.stderr;
    expect(diff.result.changedObjects.map((object) => object.name)).toEqual(['settings']);
    expect(diff.result.changedObjects[0]?.diff).toContain('postgres://app:*****@db');
    expect(shown).not.toContain('first-password-value');
    expect(shown).not.toContain('second-password-value');
    args = changedArgs;
  });

  it('are masked in render errors', async () => {
    const broken = await project({
      ...files('third-password-value'),
      'app/cm.yaml': "{{ raise('cannot connect with ' ~ db.password) }}",
    });
    const run = await gantryJson(['diff', '-t', 'default', '--project-dir', broken, '--context', await localContext()]);
    expect(run.code).toBe(1);
    const messages = run.result.errors.map((error) => error.message).join('\n');
    expect(messages).toContain('cannot connect with *****');
    expect(messages + run.stderr).not.toContain('third-password-value');
  });
});

it('has an object for every rendered item (the format keeps deployment order)', async () => {
  const dir = await project({
    '.kluctl.yaml': 'targets:\n  - name: default\n',
    'deployment.yaml': 'deployments:\n  - path: b\n  - path: a\n',
    'a/cm.yaml': configMap('a', '1'),
    'b/cm.yaml': configMap('b', '2'),
  });
  const prepared = await prepareTarget(request(dir), newEngine(), { kubeConfig: undefined, progress: quiet });
  expect(targetObjects(prepared.rendered).map((object) => object.metadata.name)).toEqual(['b', 'a']);
  expect(prepared.rendered.cluster.offline).toBe(true);
});
