/**
 * Stopping one-shot commands on the real cluster: SIGINT (Ctrl-C) or SIGTERM mid-deploy (or mid-delete) stops sending,
 * releases the target's lock, prints what was applied (or deleted) and exits 130 or 143, so the next deploy of the target starts at once; a
 * second signal exits at once; a Ctrl-C reaching the Jinja2 workers too prints no Python traceback; no temporary
 * folder is left; and bin/gantry.js started by an older Node passes the signal on to the Node it re-launches.
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TARGET_LOCK_NAMESPACE, targetLockName } from '../../src/deploy/target-lock.ts';
import { gantry, kubectl, kubectlJson, localContext, startGantry, type GantryProcess, type JsonResult } from '../support/cli.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';

const PREFIX = 'gantry-e2e-signals';
const PARTS = 4;
const PER_PART = 50;
/** The machine's Node when older than 24 (e.g. /usr/bin/node), for bin/gantry.js's re-launch; else those tests skip. */
const node = await olderNode();

let context = '';
/** The last command's own TMPDIR, which must be empty again when it has exited. */
let tmp = '';
const tmpDirs: string[] = [];
const projects: string[] = [];
const namespaces: string[] = [];

beforeAll(async () => {
  context = await localContext();
});

afterAll(async () => {
  for (const namespace of namespaces) {
    await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'lease', targetLockName(namespace), '-n', TARGET_LOCK_NAMESPACE, '--ignore-not-found']);
  }
  for (const dir of [...projects, ...tmpDirs]) await removeCopy(dir);
});

/**
 * 200 ConfigMaps in four items, the last two behind a gate: an item waiting for ConfigMap `go`, which no one
 * creates until the test does. A deploy thus stops at the gate with half of them applied, for as long as the test
 * needs, whatever the machine's speed. Namespace and discriminator are `gantry-e2e-signals-<name>`.
 */
async function gatedProject(name: string): Promise<{ namespace: string; args: string[] }> {
  const namespace = `${PREFIX}-${name}`;
  const files: Record<string, string> = {
    '.kluctl.yaml': `discriminator: ${namespace}\ntargets:\n  - name: default\n`,
    'deployment.yaml': [
      'deployments:',
      '  - path: ns',
      '  - barrier: true',
      '  - path: part-0',
      '  - path: part-1',
      '  - barrier: true',
      '  - barrier: true',
      `    waitReadinessObjects: [{kind: ConfigMap, name: go, namespace: ${namespace}}]`,
      '  - path: part-2',
      '  - path: part-3',
      '',
    ].join('\n'),
    'ns/namespace.yaml': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
  };
  for (let part = 0; part < PARTS; part++) {
    for (let index = 0; index < PER_PART; index++) {
      const name = `cm-${part}-${index}`;
      files[`part-${part}/${name}.yaml`] = JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace },
        data: { part: String(part) },
      });
    }
  }
  const dir = await writeProject(files);
  projects.push(dir);
  namespaces.push(namespace);
  await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=true']);
  return { namespace, args: ['deploy', '-y', '-t', 'default', '--project-dir', dir, '--context', context, '-o', 'json'] };
}

/** Names of the target's ConfigMaps in the cluster. */
async function deployed(namespace: string): Promise<string[]> {
  const list = await kubectlJson(['get', 'configmaps', '-n', namespace, '-l', `kluctl.io/discriminator=${namespace}`]);
  return list.items.map((item) => item['metadata'].name as string).sort();
}

/** Who holds the target's Lease now ('' once released). */
async function leaseHolder(namespace: string): Promise<string> {
  const lease = await kubectlJson<{ spec: { holderIdentity?: string } }>([
    'get',
    'lease',
    targetLockName(namespace),
    '-n',
    TARGET_LOCK_NAMESPACE,
  ]);
  return lease.spec.holderIdentity ?? '';
}

/** Starts `gantry <args>` with a TMPDIR of its own, in its own process group (so a test can signal it as a terminal). */
async function start(args: readonly string[], node?: string): Promise<GantryProcess> {
  tmp = await mkdtemp(path.join(os.tmpdir(), `${PREFIX}-tmp-`));
  tmpDirs.push(tmp);
  return startGantry(args, { env: { TMPDIR: tmp }, processGroup: true, ...(node ? { node } : {}) });
}

/** What is left in the last command's TMPDIR, but Node's compile cache, kept there by design. */
async function leftInTmp(): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name !== 'node-compile-cache');
}

/** The process group's last processes (a worker a second signal left rendering), ended; none left is fine. */
function killGroup(command: GantryProcess): void {
  try {
    command.signal('SIGKILL', { group: true });
  } catch {
    // The group is gone already.
  }
}

/** The part numbers of the ConfigMaps in a result, each once, sorted. */
function partsOf(refs: JsonResult['newObjects']): string[] {
  return [...new Set(refs.filter((ref) => ref.kind === 'ConfigMap').map((ref) => ref.name.split('-')[1] as string))].sort();
}

/** A Node older than 24 on the machine (its own, not the repository's), for bin/gantry.js's re-launch. */
async function olderNode(): Promise<string | undefined> {
  const found = await execa('which', ['-a', 'node'], { reject: false });
  for (const candidate of found.stdout.split('\n').filter(Boolean)) {
    const version = await execa(candidate, ['--version'], { reject: false });
    if (Number(/^v(\d+)/.exec(version.stdout)?.[1] ?? 99) < 24) return candidate;
  }
  return undefined;
}

/**
 * Deploys the gated project, sends `signal` while the deploy waits at the gate (to the whole process group when
 * `group`, as a terminal's Ctrl-C), and checks what a stopped deploy must leave: its exit code, its partial result
 * (the first two parts applied, nothing after the gate), the lock released and no temporary folder.
 */
async function interruptAtGate(
  name: string,
  signal: 'SIGINT' | 'SIGTERM',
  options: { group?: boolean; node?: string } = {},
): Promise<{ namespace: string; args: string[]; stderr: string }> {
  const { namespace, args } = await gatedProject(name);
  const deploy = await start(args, options.node);
  try {
    await deploy.waitForOutput('stderr', /waiting for 1 object\(s\): readiness of <wait>/, 120_000);
    deploy.signal(signal, { group: options.group ?? false });
    const code = await deploy.exited;
    const { stdout, stderr } = deploy.output;
    expect(code, stderr).toBe(signal === 'SIGINT' ? 130 : 143);
    const result = JSON.parse(stdout) as JsonResult;
    expect(partsOf(result.newObjects)).toEqual(['0', '1']);
    expect(result.newObjects.filter((ref) => ref.kind === 'ConfigMap')).toHaveLength(2 * PER_PART);
    expect(result.errors.map((error) => error.message)).toContainEqual(expect.stringMatching(new RegExp(`^interrupted by ${signal}`)));
    expect(stderr).not.toMatch(/Traceback|KeyboardInterrupt/);
    expect(await deployed(namespace)).toHaveLength(2 * PER_PART);
    expect(await leaseHolder(namespace)).toBe('');
    expect(await leftInTmp()).toEqual([]);
    return { namespace, args, stderr };
  } finally {
    killGroup(deploy);
  }
}

describe('signals', { timeout: 300_000 }, () => {
  it('SIGINT mid-deploy: exit 130, the partial result printed, the lock released, and the next deploy starts at once', async () => {
    const { namespace, args } = await interruptAtGate('sigint', 'SIGINT');
    await kubectl(['create', 'configmap', 'go', '-n', namespace]);
    const started = Date.now();
    const next = await gantry(args);
    const seconds = (Date.now() - started) / 1000;
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).not.toMatch(/being changed by/);
    expect(await deployed(namespace)).toHaveLength(PARTS * PER_PART);
    // The Lease the stopped deploy held would hold this one up for 30 s had it not been released.
    expect(seconds).toBeLessThan(25);
    console.log(`the deploy after the interrupted one took ${seconds.toFixed(1)} s`);
  });

  it('SIGTERM mid-deploy: exit 143, with the same partial result', async () => {
    await interruptAtGate('sigterm', 'SIGTERM');
  });

  it('SIGINT while delete waits for a finalizer: exit 130, everything deleted so far listed, the lock released', async () => {
    const namespace = `${PREFIX}-delete`;
    const files: Record<string, string> = {
      '.kluctl.yaml': `discriminator: ${namespace}\ntargets:\n  - name: default\n`,
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/namespace.yaml': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
      // Deleting it waits until the test removes its finalizer: the delete stops there, whatever the machine's speed.
      'app/held.yaml': JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'held', namespace, finalizers: ['gantry.test/hold'] },
      }),
    };
    for (let index = 0; index < 20; index++)
      files[`app/cm-${index}.yaml`] = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${index}`, namespace } });
    const dir = await writeProject(files);
    projects.push(dir);
    namespaces.push(namespace);
    const args = ['-t', 'default', '--project-dir', dir, '--context', context];
    await kubectl(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=true']);
    const deploy = await gantry(['deploy', ...args]);
    expect(deploy.code, deploy.stdout).toBe(0);
    const deletion = await start(['delete', '-y', ...args, '-o', 'json']);
    try {
      await deletion.waitForOutput('stderr', /waiting for \d+ object\(s\) to disappear/, 60_000);
      deletion.signal('SIGINT');
      expect(await deletion.exited, deletion.output.stderr).toBe(130);
      const result = JSON.parse(deletion.output.stdout) as JsonResult;
      expect(result.deletedObjects.filter((ref) => ref.kind === 'ConfigMap')).toHaveLength(21);
      // Namespaces go last, after the wait the signal ended.
      expect(result.deletedObjects.filter((ref) => ref.kind === 'Namespace')).toEqual([]);
      expect(result.errors.map((error) => error.message)).toContainEqual(expect.stringMatching(/^interrupted by SIGINT/));
      expect(await leaseHolder(namespace)).toBe('');
      expect(await leftInTmp()).toEqual([]);
    } finally {
      killGroup(deletion);
      await kubectl(['patch', 'configmap', 'held', '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
  });

  it('a second signal exits at once, while the first still waits for a template being rendered', async () => {
    const dir = await writeProject({
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/slow.yaml': [
        '{{ debug_print("slow template started") }}',
        '{% set counter = namespace(n=0) %}{% for i in range(20000000) %}{% set counter.n = counter.n + 1 %}{% endfor %}',
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata: {name: slow, namespace: default}',
        'data: {n: "{{ counter.n }}"}',
        '',
      ].join('\n'),
    });
    projects.push(dir);
    const render = await start(['render', '--offline-kubernetes', '--project-dir', dir]);
    try {
      await render.waitForOutput('stderr', /slow template started/, 60_000);
      render.signal('SIGINT');
      // The first signal's stop closes the Jinja2 workers, waiting up to 5 s for the one still rendering.
      await render.waitForOutput('stderr', /SIGINT: stopping/);
      const sent = Date.now();
      render.signal('SIGTERM');
      expect(await render.exited, render.output.stderr).toBe(130);
      expect(Date.now() - sent).toBeLessThan(2000);
      expect(render.output.stderr).toContain('SIGTERM again: exiting at once');
      expect(render.output.stdout).toBe('');
    } finally {
      killGroup(render);
    }
  });

  it('Ctrl-C during a render of many Jinja2 templates: exit 130, no Python traceback, no temporary folder left', async () => {
    const files: Record<string, string> = { 'deployment.yaml': 'deployments:\n  - path: app\n' };
    for (let index = 0; index < 200; index++) {
      files[`app/cm-${index}.yaml`] = [
        `{{ debug_print("rendering ${index}") }}`,
        '{% set counter = namespace(n=0) %}{% for i in range(50000) %}{% set counter.n = counter.n + 1 %}{% endfor %}',
        `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-${index}", "namespace": "default"}, "data": {"n": "{{ counter.n }}"}}`,
        '',
      ].join('\n');
    }
    const dir = await writeProject(files);
    projects.push(dir);
    const render = await start(['render', '--offline-kubernetes', '--project-dir', dir]);
    try {
      await render.waitForOutput('stderr', /debug_print: rendering/, 60_000);
      render.signal('SIGINT', { group: true });
      expect(await render.exited, render.output.stderr).toBe(130);
      expect(render.output.stderr).toMatch(/error: interrupted by SIGINT/);
      expect(render.output.stderr).not.toMatch(/Traceback|KeyboardInterrupt/);
      // The render was stopped halfway: not every template had started.
      expect(render.output.stderr.match(/debug_print: rendering/g)?.length ?? 0).toBeLessThan(200);
      expect(render.output.stdout).toBe('');
      expect(await leftInTmp()).toEqual([]);
    } finally {
      killGroup(render);
    }
  });

  describe('through bin/gantry.js started by an older Node, which re-launches itself', () => {
    it.skipIf(!node)("a terminal's Ctrl-C, which reaches both processes, stops the deploy once: exit 130", async () => {
      const { stderr } = await interruptAtGate('relaunched-sigint', 'SIGINT', { group: true, node });
      expect(stderr).not.toMatch(/exiting at once/);
    });

    it.skipIf(!node)('SIGTERM to the re-launching process reaches the deploy: exit 143', async () => {
      await interruptAtGate('relaunched-sigterm', 'SIGTERM', { node });
    });
  });
});
