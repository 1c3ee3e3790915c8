/**
 * Command results: -o format=path files, --short-output, results kept in the cluster (newest N), Secret values
 * never shown in diffs; and delete hooks around `delete`.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/kube/cluster.ts';
import { readCommandResults, writeCommandResult } from '../../src/deploy/result-store.ts';
import { parseYaml } from '../../src/yaml.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry, gantryJson, KUBECONFIG, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

const NS = 'gantry-e2e-results';
const RESULTS_NS = 'gantry-e2e-results-store';
let dir = '';
let out = '';
let args: string[] = [];

const secret = (value: string) =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: ${NS}\nstringData:\n  password: ${value}\n  user: admin\n`;

beforeAll(async () => {
  dir = await writeProject({
    '.kluctl.yaml': 'discriminator: gantry-e2e-results\ntargets:\n  - name: t\n',
    'deployment.yaml': 'deployments:\n  - path: ns\n  - barrier: true\n  - path: app\n',
    'ns/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS}\n`,
    'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${NS}\ndata:\n  level: "1"\n`,
    'app/secret.yaml': secret('first-secret-value'),
    'app/goodbye.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: goodbye\n  namespace: default\n  annotations:\n    kluctl.io/hook: post-delete\n    kluctl.io/hook-wait: "false"\ndata:\n  said: "yes"\n`,
  });
  out = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-results-'));
  args = ['-t', 't', '--project-dir', dir, '--context', await localContext()];
});
afterAll(async () => {
  await gantryJson(['delete', '-y', ...args]);
  await kubectl(['delete', 'namespace', NS, RESULTS_NS, '--ignore-not-found', '--wait=false']);
  await kubectl(['delete', 'configmap', 'goodbye', '-n', 'default', '--ignore-not-found']);
  await removeCopy(dir);
  await rm(out, { recursive: true, force: true });
});

describe('command results', { timeout: 300_000 }, () => {
  it('refuses an output file it could not write before changing anything', async () => {
    const namespace = () => kubectl(['get', 'namespace', NS, '--ignore-not-found', '-o', 'jsonpath={.metadata.uid}']);
    const before = await namespace();
    for (const [output, problem] of [
      [`json=${out}/no/such/dir/result.json`, `the folder ${out}/no/such/dir does not exist`],
      [`yaml=${out}`, `${out} is a folder, not a file`],
    ] as const) {
      const run = await gantry(['deploy', ...args, '-o', output]);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain(`-o ${output}: ${problem}`);
    }
    expect(await namespace()).toBe(before);
  });

  it('writes the result to files in several formats at once', async () => {
    const run = await gantry(['deploy', ...args, '-o', 'text', '-o', `json=${out}/result.json`, '-o', `yaml=${out}/result.yaml`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^New objects:\n/);
    const json = JSON.parse(await readFile(`${out}/result.json`, 'utf8'));
    const yaml = parseYaml(await readFile(`${out}/result.yaml`, 'utf8'), 'result.yaml');
    expect(yaml).toEqual(json);
    expect(names(json.newObjects)).toContain(`${NS}/Secret/creds`);
  });

  it('never shows Secret values in diffs, only which keys changed; --short-output leaves diffs out', async () => {
    await writeFile(path.join(dir, 'app/secret.yaml'), secret('second-secret-value'));
    const { result } = await gantryJson(['diff', ...args]);
    const diff = result.changedObjects.find((changed) => changed.kind === 'Secret')?.diff ?? '';
    expect(diff).toMatch(/^- {2}password: "\*\*\*\*\* \(obfuscated, old value\)"$/m);
    expect(diff).toMatch(/^\+ {2}password: "\*\*\*\*\* \(obfuscated, new value\)"$/m);
    expect(diff).toMatch(/^ {3}user: "\*\*\*\*\* \(obfuscated\)"$/m);
    expect(diff).not.toMatch(/secret-value/);
    expect(JSON.stringify(result)).not.toMatch(/secret-value/);
    const short = await gantry(['diff', ...args, '--short-output']);
    expect(short.stdout).toMatch(/Changed objects:\n  gantry-e2e-results\/Secret\/creds/);
    expect(short.stdout).not.toMatch(/Diff for object/);
  });

  it('keeps results in the cluster, only the newest N per project and target', async () => {
    const store = ['--write-command-result', '--command-result-namespace', RESULTS_NS, '--keep-command-results-count', '2'];
    for (const command of ['diff', 'deploy', 'validate']) expect((await gantryJson([command, ...args, ...store])).code).toBe(0);
    const secrets = (await kubectlJson(['get', 'secrets', '-n', RESULTS_NS])).items;
    expect(secrets.map((item) => item.metadata.labels['gantry.dev/result-command']).sort()).toEqual(['deploy', 'validate']);
    const stored = await readCommandResults(
      Cluster.connect({ kubeconfig: KUBECONFIG }),
      { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results' },
      RESULTS_NS,
    );
    expect(stored.map((entry) => entry.commandInfo.command)).toEqual(['validate', 'deploy']);
    expect(names(stored[1]?.result.changedObjects ?? [])).toEqual([`${NS}/Secret/creds`]);
    expect(JSON.stringify(stored)).not.toMatch(/secret-value/);
  });

  it('refuses a kept-results count below 1 before running, and with 1 keeps the result just written', async () => {
    const store = ['--write-command-result', '--command-result-namespace', RESULTS_NS];
    for (const count of ['0', 'x', '1.5']) {
      const run = await gantry(['validate', ...args, ...store, '--keep-command-results-count', count]);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain(
        `option '--keep-command-results-count <count>' argument '${count}' is invalid. '${count}' is not a positive integer`,
      );
    }
    expect((await kubectlJson(['get', 'secrets', '-n', RESULTS_NS])).items).toHaveLength(2);
    const cluster = Cluster.connect({ kubeconfig: KUBECONFIG });
    const stored = (
      await readCommandResults(cluster, { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results' }, RESULTS_NS)
    )[0]!;
    await expect(writeCommandResult(cluster, stored, { namespace: RESULTS_NS, keep: 0, fieldManager: 'gantry' })).rejects.toThrow(
      'results to keep must be a whole number of at least 1, not 0',
    );
    expect((await gantryJson(['validate', ...args, ...store, '--keep-command-results-count', '1'])).code).toBe(0);
    const kept = await readCommandResults(cluster, { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results' }, RESULTS_NS);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.commandInfo.startTime > stored.commandInfo.startTime).toBe(true);

    // The same project and target name with another discriminator (other args): its results are kept apart.
    const other = { ...kept[0]!, commandInfo: { ...kept[0]!.commandInfo, discriminator: 'gantry-e2e-results-other' } };
    await writeCommandResult(cluster, other, { namespace: RESULTS_NS, keep: 1, fieldManager: 'gantry' });
    expect(await readCommandResults(cluster, { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results' }, RESULTS_NS)).toEqual(
      kept,
    );
    expect(
      await readCommandResults(cluster, { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results-other' }, RESULTS_NS),
    ).toEqual([other]);
  });

  it('makes the results namespace again when someone deleted it', async () => {
    const cluster = Cluster.connect({ kubeconfig: KUBECONFIG });
    const stored = (
      await readCommandResults(cluster, { projectKey: dir, target: 't', discriminator: 'gantry-e2e-results' }, RESULTS_NS)
    )[0]!;
    await kubectl(['delete', 'namespace', RESULTS_NS, '--wait=true']);
    const id = await writeCommandResult(cluster, stored, { namespace: RESULTS_NS, keep: 2, fieldManager: 'gantry' });
    expect((await kubectlJson(['get', 'secrets', '-n', RESULTS_NS])).items.map((item) => item['metadata'].name)).toEqual([id]);
  });

  it('runs post-delete hooks after deleting the target', async () => {
    const { code, result } = await gantryJson(['delete', '-y', ...args]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.appliedHooks)).toEqual(['default/ConfigMap/goodbye']);
    expect(names(result.deletedObjects)).toEqual(expect.arrayContaining([`${NS}/ConfigMap/settings`, `Namespace/${NS}`]));
  });
});
