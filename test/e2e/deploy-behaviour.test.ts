/**
 * Kluctl's deploy behaviour on the real cluster: hooks, field-manager conflicts, deleteObjects and
 * kluctl.io/delete, waitReadinessObjects, diff annotations, and the replace/abort flags.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

const NS = 'gantry-e2e-behaviour';
const configMap = (name: string, data: Record<string, string>, annotations: Record<string, string> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, annotations }, data });
const job = (name: string, annotations: Record<string, string>) =>
  JSON.stringify({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations },
    spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } } },
  });

let context = '';
const projects: string[] = [];
beforeAll(async () => {
  context = await localContext();
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true']);
});
afterAll(async () => {
  for (const dir of projects) {
    await gantryJson(['delete', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
    await removeCopy(dir);
  }
  await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
});

async function project(name: string, files: Record<string, string>): Promise<{ dir: string; args: string[] }> {
  const dir = await writeProject({
    '.kluctl.yaml': `discriminator: gantry-e2e-behaviour-${name}\ntargets:\n  - name: t\n`,
    'ns/namespace.yaml': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }),
    ...files,
  });
  projects.push(dir);
  return { dir, args: ['-t', 't', '--project-dir', dir, '--context', context] };
}

describe('deploy behaviour', { timeout: 300_000 }, () => {
  it('runs initial hooks only on the first deploy, upgrade hooks only later, and deletes succeeded hooks', async () => {
    const { args } = await project('hooks', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/main.yaml': configMap('main', { key: 'value' }),
      'app/initial.yaml': job('hook-initial', { 'kluctl.io/hook': 'pre-deploy-initial' }),
      'app/upgrade.yaml': configMap('hook-upgrade', { phase: 'upgrade' }, { 'kluctl.io/hook': 'post-deploy-upgrade' }),
      'app/helm.yaml': configMap('hook-helm', { phase: 'install' }, { 'helm.sh/hook': 'post-install' }),
      'app/cleanup.yaml': job('hook-cleanup', {
        'kluctl.io/hook': 'post-deploy',
        'kluctl.io/hook-delete-policy': 'hook-succeeded',
        'kluctl.io/hook-weight': '5',
      }),
    });
    const first = await gantryJson(['deploy', ...args]);
    expect(first.result.errors).toEqual([]);
    expect(names(first.result.appliedHooks)).toEqual([`${NS}/ConfigMap/hook-helm`, `${NS}/Job/hook-cleanup`, `${NS}/Job/hook-initial`]);
    expect(names(first.result.newObjects)).toEqual([`Namespace/${NS}`, `${NS}/ConfigMap/main`]);
    const initialJob = await kubectlJson<Record<string, any>>(['get', 'job', 'hook-initial', '-n', NS]);
    expect(initialJob.status.succeeded).toBe(1);
    const jobs = (await kubectlJson(['get', 'jobs', '-n', NS])).items.map((item) => item.metadata.name);
    expect(jobs).not.toContain('hook-cleanup');

    const second = await gantryJson(['deploy', ...args]);
    expect(second.result.errors).toEqual([]);
    expect(names(second.result.appliedHooks)).toEqual([`${NS}/ConfigMap/hook-upgrade`, `${NS}/Job/hook-cleanup`]);
    expect(second.result.newObjects).toEqual([]);
  });

  it('gives up fields another manager took, with a warning, and takes them back with force-apply-field', async () => {
    const { dir, args } = await project('conflicts', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/shared.yaml': configMap('shared', { mine: 'gantry', contested: 'gantry' }),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await kubectl(
      ['apply', '--server-side', '--force-conflicts', '--field-manager=operator', '-f', '-'],
      configMap('shared', { contested: 'operator' }).replace('"metadata":{', `"metadata":{"namespace":"${NS}",`),
    );

    const yielding = await gantryJson(['deploy', ...args]);
    expect(yielding.result.errors).toEqual([]);
    expect(yielding.result.warnings).toEqual([
      {
        object: expect.objectContaining({ name: 'shared' }),
        message: expect.stringMatching(/conflict with "operator".*Not updating field '\.data\.contested' as we lost field ownership/),
      },
    ]);
    expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'shared', '-n', NS])).data).toEqual({
      mine: 'gantry',
      contested: 'operator',
    });

    await writeFile(
      path.join(dir, 'app/shared.yaml'),
      configMap('shared', { mine: 'gantry', contested: 'gantry' }, { 'kluctl.io/force-apply-field': 'data.contested' }),
    );
    const forcing = await gantryJson(['deploy', ...args]);
    expect(forcing.result.errors).toEqual([]);
    expect(forcing.result.warnings).toEqual([]);
    expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'shared', '-n', NS])).data).toEqual({
      mine: 'gantry',
      contested: 'gantry',
    });
  });

  it('deletes deleteObjects and kluctl.io/delete objects, and waits for waitReadinessObjects', async () => {
    await kubectl(['create', 'namespace', NS]).catch(() => undefined);
    await kubectl(['create', 'configmap', 'legacy', '-n', NS]);
    await kubectl(['create', 'configmap', 'obsolete', '-n', NS]);
    await kubectl(['create', 'deployment', 'external', '--image=busybox', '-n', NS]);
    const { args } = await project('deletions', {
      'deployment.yaml': [
        'deployments:',
        '  - path: ns',
        '  - barrier: true',
        `  - deleteObjects: [{kind: ConfigMap, name: legacy, namespace: ${NS}}]`,
        '  - path: app',
        '  - barrier: true',
        `    waitReadinessObjects: [{group: apps, kind: Deployment, name: external, namespace: ${NS}}]`,
        `overrideNamespace: ${NS}`,
        '',
      ].join('\n'),
      'app/obsolete.yaml': configMap('obsolete', {}, { 'kluctl.io/delete': 'true' }),
      'app/kept.yaml': configMap('kept', { key: 'value' }),
    });
    const { code, result } = await gantryJson(['deploy', ...args]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.deletedObjects)).toEqual([`${NS}/ConfigMap/legacy`, `${NS}/ConfigMap/obsolete`]);
    const left = (await kubectlJson(['get', 'configmaps', '-n', NS])).items.map((item) => item.metadata.name);
    expect(left).toContain('kept');
    expect(left).not.toContain('legacy');
    expect(left).not.toContain('obsolete');
  });

  it('names a waitReadinessObjects object that never becomes ready', async () => {
    const { args } = await project('wait-missing', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - waitReadinessObjects: [{group: apps, kind: Deployment, name: never-there, namespace: ${NS}}]\n`,
    });
    const { code, result } = await gantryJson(['deploy', ...args, '--readiness-timeout', '3s']);
    expect(code).toBe(1);
    expect(result.errors).toEqual([
      {
        object: expect.objectContaining({ name: 'never-there' }),
        message: expect.stringMatching(/not ready before the timeout: does not exist/),
      },
    ]);
  });

  it('leaves ignored fields out of diffs and diffs a renamed object against its diff-name', async () => {
    const { dir, args } = await project('diff-rules', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\nignoreForDiff:\n  - kind: ConfigMap\n    name: rules\n    fieldPath: data.ignoredByProject\n`,
      'app/rules.yaml': configMap(
        'rules',
        { compared: '1', ignoredByProject: '1', ignoredByAnnotation: '1' },
        { 'kluctl.io/ignore-diff-field': 'data.ignoredByAnnotation' },
      ),
      'app/versioned.yaml': configMap('versioned-v1', { version: '1' }, { 'kluctl.io/diff-name': 'versioned' }),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await writeFile(
      path.join(dir, 'app/rules.yaml'),
      configMap(
        'rules',
        { compared: '1', ignoredByProject: '2', ignoredByAnnotation: '2' },
        { 'kluctl.io/ignore-diff-field': 'data.ignoredByAnnotation' },
      ),
    );
    await writeFile(
      path.join(dir, 'app/versioned.yaml'),
      configMap('versioned-v2', { version: '2' }, { 'kluctl.io/diff-name': 'versioned' }),
    );
    const { result } = await gantryJson(['diff', ...args]);
    expect(result.newObjects).toEqual([]);
    expect(names(result.changedObjects)).toEqual([`${NS}/ConfigMap/versioned-v2`]);
    expect(result.changedObjects[0]?.diff).toMatch(/-  name: versioned-v1\n\+  name: versioned-v2/);
    expect(result.changedObjects[0]?.diff).toMatch(/-  version: "1"\n\+  version: "2"/);
  });

  it('ignores whole objects (ignore-diff) and fields by regex (ignore-diff-field-regex) in diffs', async () => {
    const { dir, args } = await project('diff-annotations', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/whole.yaml': configMap('ignored-whole', { v: '1' }, { 'kluctl.io/ignore-diff': 'true' }),
      'app/regex.yaml': configMap(
        'ignored-regex',
        { 'build-1': '1', kept: '1' },
        { 'kluctl.io/ignore-diff-field-regex': 'data\\.build-.*' },
      ),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await writeFile(path.join(dir, 'app/whole.yaml'), configMap('ignored-whole', { v: '2' }, { 'kluctl.io/ignore-diff': 'true' }));
    await writeFile(
      path.join(dir, 'app/regex.yaml'),
      configMap('ignored-regex', { 'build-1': '2', kept: '1' }, { 'kluctl.io/ignore-diff-field-regex': 'data\\.build-.*' }),
    );
    expect((await gantryJson(['diff', ...args])).result.changedObjects).toEqual([]);
    await writeFile(
      path.join(dir, 'app/regex.yaml'),
      configMap('ignored-regex', { 'build-1': '2', kept: '2' }, { 'kluctl.io/ignore-diff-field-regex': 'data\\.build-.*' }),
    );
    expect(names((await gantryJson(['diff', ...args])).result.changedObjects)).toEqual([`${NS}/ConfigMap/ignored-regex`]);
  });

  it('takes every conflicting field with --force-apply, without warnings', async () => {
    const { args } = await project('force-apply', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/forced.yaml': configMap('forced', { contested: 'gantry' }),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await kubectl(
      ['apply', '--server-side', '--force-conflicts', '--field-manager=operator', '-f', '-'],
      configMap('forced', { contested: 'operator' }).replace('"metadata":{', `"metadata":{"namespace":"${NS}",`),
    );
    const { result } = await gantryJson(['deploy', ...args, '--force-apply']);
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'forced', '-n', NS])).data).toEqual({ contested: 'gantry' });
  });

  it('prunes an object with ownerReferences only when it is annotated kluctl.io/force-managed', async () => {
    const { dir, args } = await project('force-managed', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/owner.yaml': configMap('owner', {}),
      'app/owned.yaml': configMap('owned', {}),
      'app/adopted.yaml': configMap('adopted', {}, { 'kluctl.io/force-managed': 'true' }),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    const owner = await kubectlJson<Record<string, any>>(['get', 'configmap', 'owner', '-n', NS]);
    const ownerRef = JSON.stringify([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }]);
    for (const name of ['owned', 'adopted'])
      await kubectl(['patch', 'configmap', name, '-n', NS, '--type=merge', '-p', `{"metadata":{"ownerReferences":${ownerRef}}}`]);
    await writeFile(path.join(dir, 'app/owned.yaml'), '');
    await writeFile(path.join(dir, 'app/adopted.yaml'), '');
    const { result } = await gantryJson(['prune', '-y', ...args]);
    expect(names(result.deletedObjects)).toEqual([`${NS}/ConfigMap/adopted`]);
  });

  it('does not wait for readiness with --no-wait', async () => {
    const { args } = await project('no-wait', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/stuck.yaml': JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'stuck' },
        spec: {
          selector: { matchLabels: { app: 'stuck' } },
          template: {
            metadata: { labels: { app: 'stuck' } },
            spec: { nodeSelector: { 'no-such': 'node' }, containers: [{ name: 'main', image: 'busybox' }] },
          },
        },
      }),
    });
    const waiting = await gantryJson(['deploy', ...args, '--readiness-timeout', '3s']);
    expect(waiting.code).toBe(1);
    expect(waiting.result.errors[0]?.message).toMatch(/not ready before the timeout: .*Unschedulable/);
    const notWaiting = await gantryJson(['deploy', ...args, '--no-wait']);
    expect(notWaiting.result.errors).toEqual([]);
    expect(notWaiting.code).toBe(0);
  });

  it('sends no object unchanged since its last apply, and applies again whatever anyone changed', async () => {
    const settings = (data: Record<string, string>) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', labels: { tier: 'web' } }, data });
    const { dir, args } = await project('unchanged', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/settings.yaml': settings({ color: 'blue', size: 'l' }),
      'app/token.yaml': JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token' }, stringData: { token: 't' } }),
    });
    const live = () => kubectlJson<Record<string, any>>(['get', 'configmap', 'settings', '-n', NS]);
    const deploy = async () => {
      const run = await gantryJson(['deploy', ...args]);
      expect(run.result.errors).toEqual([]);
      return run;
    };
    expect(names((await deploy()).result.newObjects)).toContain(`${NS}/ConfigMap/settings`);

    // The Secret is always sent; the ConfigMap is not, also when others add beside it what the render does not set.
    await kubectl(['annotate', 'configmap', 'settings', '-n', NS, 'owner=ops']);
    const quiet = await deploy();
    expect(quiet.stderr).toContain('app: applied 2 object(s), 1 of them unchanged since their last apply (not sent)');
    expect(quiet.result.changedObjects).toEqual([]);

    await kubectl(['patch', 'configmap', 'settings', '-n', NS, '--type=merge', '-p', '{"data":{"color":"red"}}']);
    await kubectl(['label', 'configmap', 'settings', '-n', NS, 'tier-']);
    const restoring = await deploy();
    expect(restoring.stderr).toContain('app: applied 2 object(s)\n');
    expect(names(restoring.result.changedObjects)).toEqual([`${NS}/ConfigMap/settings`]);
    expect(await live()).toMatchObject({ metadata: { labels: { tier: 'web' } }, data: { color: 'blue' } });

    await writeFile(path.join(dir, 'app/settings.yaml'), settings({ color: 'blue' }));
    await deploy();
    expect((await live()).data).toEqual({ color: 'blue' });
    expect((await deploy()).stderr).toContain('1 of them unchanged');
    expect((await gantryJson(['diff', ...args])).result.changedObjects).toEqual([]);
  });

  it('reports an object that existed without the discriminator label as changed, not new', async () => {
    const { args } = await project('adopted', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/adopted.yaml': configMap('adopted', { color: 'blue' }),
      'app/fresh.yaml': configMap('fresh', { color: 'blue' }),
    });
    await kubectl(['create', 'namespace', NS]).catch(() => undefined);
    await kubectl(['create', 'configmap', 'adopted', '-n', NS, '--from-literal=color=red']);
    const { result } = await gantryJson(['deploy', ...args]);
    expect(result.errors).toEqual([]);
    expect(names(result.newObjects)).toContain(`${NS}/ConfigMap/fresh`);
    expect(names(result.newObjects)).not.toContain(`${NS}/ConfigMap/adopted`);
    expect(names(result.changedObjects)).toContain(`${NS}/ConfigMap/adopted`);
  });

  it('replaces an object the API server refuses to patch only when asked to', async () => {
    const { dir, args } = await project('replace', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\n`,
      'app/frozen.yaml': JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'frozen' },
        immutable: true,
        data: { key: 'one' },
      }),
    });
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await writeFile(
      path.join(dir, 'app/frozen.yaml'),
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'frozen' }, immutable: true, data: { key: 'two' } }),
    );
    const refused = await gantryJson(['deploy', ...args]);
    expect(refused.code).toBe(1);
    expect(refused.result.errors[0]?.message).toMatch(/immutable/);
    const replaced = await gantryJson(['deploy', ...args, '--force-replace-on-error']);
    expect(replaced.result.errors).toEqual([]);
    expect(replaced.result.warnings.map((warning) => warning.message)).toEqual([
      expect.stringMatching(/retrying with replace/),
      expect.stringMatching(/deleting and re-creating/),
    ]);
    expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'frozen', '-n', NS])).data).toEqual({ key: 'two' });
  });

  it('starts no further item after an error with --abort-on-error', async () => {
    const { args } = await project('abort', {
      'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: broken\n  - barrier: true\n  - path: later\noverrideNamespace: ${NS}\n`,
      'broken/bad.yaml': '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "dataa": {}}',
      'later/later.yaml': configMap('abort-later', { key: 'value' }),
    });
    const { code, result } = await gantryJson(['deploy', ...args, '--abort-on-error']);
    expect(code).toBe(1);
    expect(names(result.newObjects)).not.toContain(`${NS}/ConfigMap/abort-later`);
    const continued = await gantryJson(['deploy', ...args]);
    expect(names(continued.result.newObjects)).toContain(`${NS}/ConfigMap/abort-later`);
  });
});
