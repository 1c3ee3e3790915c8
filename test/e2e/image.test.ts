/**
 * Gantry's image end to end: built without a container engine (scripts/image), pushed to a registry on 127.0.0.1,
 * pulled back with crane and unpacked, then run from its root file system as a container runtime would run it: in a
 * chroot, as the image's user, with its environment, the root file system read-only and only /tmp writable (as
 * install/ runs the controller). There `gantry version` finds every program renders need, and `gantry controller run`
 * deploys a KluctlDeployment from a git server until it is Ready. The Dockerfile, which cannot be built here, is held
 * to the same versions and configuration.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageConfig } from '../../scripts/image/config.ts';
import { crane } from '../../scripts/image/crane.ts';
import { buildImage, type BuiltImage } from '../../scripts/image/image.ts';
import { mebibytes } from '../../scripts/image/layers.ts';
import { DEBIAN_PACKAGES, DEBIAN_SUITE, IMAGE_TOOLS, nodeVersion } from '../../scripts/image/root-fs.ts';
import { TOOLS } from '../../scripts/setup/tools.ts';
import { run, start } from '../../src/exec.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../../src/version.ts';
import { startOciRegistry, stop, type OciRegistry } from '../support/chart-server.ts';
import { KUBECONFIG, kubectl } from '../support/cli.ts';
import { applyObject, configMapValue, installCrds, kluctlDeployment, waitFor, waitReady } from '../support/controller.ts';
import { REPO_ROOT } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';

const NAMESPACE = 'gantry-e2e-image';
const DEPLOYMENT = 'from-image';
const MIB = 1024 * 1024;

/** The image's config as crane prints it (the OCI image configuration). */
interface OciConfig {
  architecture: string;
  os: string;
  config: { User: string; Entrypoint: string[]; Cmd: string[]; Env: string[]; Labels: Record<string, string> };
}

/**
 * Runs `$@` in the root file system `$1` as a container: in a mount namespace of its own (its mounts vanish with its
 * last process, whatever happens to the test), the root bound read-only, `$2` bound as /tmp, /proc mounted, as the
 * user `$3`.
 */
const IN_IMAGE = `
root=$1 tmp=$2 user=$3
shift 3
mount --bind "$root" "$root"
mount --bind "$tmp" "$root/tmp"
mount -t proc proc "$root/proc"
mount -o remount,bind,ro "$root"
exec chroot --userspec="$user" "$root" "$@"
`;

let scratch: string;
let root: string;
let tmp: string;
let registry: OciRegistry;
let image: BuiltImage;
let repository: string;
let reference: string;
let config: OciConfig;
let testStarted: number;

/** `unshare … sh` with the arguments that run `command` in the image, and the image's environment. */
function inImage(command: readonly string[]): { file: string; args: string[]; env: Record<string, string> } {
  const env = Object.fromEntries(
    config.config.Env.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  const args = ['--mount', '--propagation=private', '--', 'sh', '-euc', IN_IMAGE, 'sh', root, tmp, config.config.User, ...command];
  return { file: '/usr/bin/unshare', args, env };
}

async function runInImage(command: readonly string[]): Promise<string> {
  const { file, args, env } = inImage(command);
  return (await run(file, args, { env, extendEnv: false })).stdout;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the image built by npm run image', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    testStarted = performance.now();
    scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-image-'));
    registry = await startOciRegistry();
    repository = `${registry.url.replace(/^oci:\/\//, '')}/gantry-dev/gantry`;
    image = await buildImage({ push: repository, report: (line) => console.error(`image: ${line}`) });
    reference = `${repository}:${GANTRY_VERSION}`;
    config = JSON.parse(await crane(['config', reference])) as OciConfig;

    // What a container runtime does: the layers, flattened, as the root file system.
    root = path.join(scratch, 'root');
    await mkdir(root);
    const flattened = path.join(scratch, 'root.tar');
    await crane(['export', reference, flattened]);
    await run('tar', ['--extract', `--file=${flattened}`, `--directory=${root}`, '--numeric-owner']);
    await rm(flattened);
    // The devices a runtime provides; the image ships an empty /dev.
    for (const [device, minor] of [
      ['null', 3],
      ['zero', 5],
      ['random', 8],
      ['urandom', 9],
    ] as const) {
      await run('mknod', ['--mode=666', path.join(root, 'dev', device), 'c', '1', String(minor)]);
    }
    // The emptyDir at /tmp: writable by anyone, sticky.
    tmp = path.join(scratch, 'tmp');
    await mkdir(tmp);
    await chmod(tmp, 0o1777);
  }, 900_000);

  afterAll(async () => {
    await registry?.close();
    // The mounts lived in the runs' own mount namespaces, gone with them: this removes plain files only.
    if (scratch) await rm(scratch, { recursive: true, force: true });
    if (image) {
      const base = image.base.cached ? 'cached' : `built in ${image.base.seconds.toFixed(1)}s`;
      console.error(
        `image: base layer ${base} (${mebibytes(image.base.bytes)}), app layer built in ${image.app.seconds.toFixed(1)}s ` +
          `(${mebibytes(image.app.bytes)}), image ${mebibytes(image.compressedBytes)} compressed, built in ${image.seconds.toFixed(1)}s; ` +
          `test ${((performance.now() - testStarted) / 1000).toFixed(1)}s`,
      );
    }
  });

  it('is tagged with the package version that install/ deploys, and is under 200 MiB compressed', async () => {
    expect((await crane(['ls', repository])).split('\n')).toEqual([GANTRY_VERSION]);
    expect(await crane(['digest', reference])).toBe(image.digest);
    const install = parseYaml(await readFile(path.join(REPO_ROOT, 'install', '.kluctl.yaml'), 'utf8')) as {
      targets: Array<{ images: Array<{ image: string; resultImage: string }> }>;
    };
    expect(install.targets[0]?.images).toContainEqual({
      image: GANTRY_IMAGE_REPOSITORY,
      resultImage: `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`,
    });
    expect(image.compressedBytes).toBeLessThan(200 * MIB);
  });

  it('runs as 65532 with gantry as entrypoint, HOME and the cache under /tmp, and says its version in its labels', () => {
    const expected = imageConfig(GANTRY_VERSION);
    expect(config.os).toBe('linux');
    expect(config.config.User).toBe('65532:65532');
    expect(config.config.Entrypoint).toEqual(['gantry']);
    expect(config.config.Cmd).toEqual(expected.cmd);
    expect(config.config.Env).toEqual(expected.env.map(([name, value]) => `${name}=${value}`));
    expect(config.config.Env).toEqual(expect.arrayContaining(['HOME=/tmp', expect.stringMatching(/^GANTRY_CACHE_DIR=\/tmp\//)]));
    expect(config.config.Labels).toEqual(expected.labels);
    expect(config.config.Labels['org.opencontainers.image.version']).toBe(GANTRY_VERSION);
    expect(config.config.Labels['org.opencontainers.image.licenses']).toBe('Apache-2.0');
  });

  it('runs here as install/ runs it: as 65532, the root file system read-only', async () => {
    await expect(runInImage(['touch', '/usr/local/probe'])).rejects.toThrow(/Read-only file system/);
    expect(await runInImage(['id', '-u'])).toBe('65532\n');
  });

  it('finds Node 24, Python with the pinned Jinja2, helm, kustomize and sops: gantry version', async () => {
    expect((await runInImage(['gantry', '--version'])).trim()).toBe(GANTRY_VERSION);
    const versions = JSON.parse(await runInImage(['gantry', 'version', '-o', 'json'])) as Record<string, any>;
    const pinnedJinja2 = /^jinja2==(.+)$/im.exec(await readFile(path.join(REPO_ROOT, 'src/template/requirements.txt'), 'utf8'))?.[1];
    const toolVersion = (name: string) => TOOLS.find((tool) => tool.name === name)?.version.replace(/^v/, '');
    expect(versions).toMatchObject({
      gantry: GANTRY_VERSION,
      node: `v${await nodeVersion()}`,
      python: { path: '/opt/gantry/python/bin/python3', jinja2: pinnedJinja2 },
      helm: { path: 'helm', version: `v${toolVersion('helm')}` },
      kustomize: { path: 'kustomize', version: `v${toolVersion('kustomize')}` },
      sops: { path: 'sops', version: toolVersion('sops') },
    });
    expect(await runInImage(['git', '--version'])).toMatch(/^git version \d/);
  });

  describe('gantry controller run', () => {
    let controller: ChildProcess;
    let log: string;
    let repo: TestRepo;
    let server: GitServer;

    const controllerLog = () => readFile(log, 'utf8');

    beforeAll(async () => {
      await installCrds();
      await kubectl(['create', 'namespace', NAMESPACE, '--dry-run=client', '-o', 'yaml']).then((yaml) =>
        kubectl(['apply', '-f', '-'], yaml),
      );
      await copyFile(KUBECONFIG, path.join(tmp, 'kubeconfig'));
      await chmod(path.join(tmp, 'kubeconfig'), 0o644);
      const [healthPort, metricsPort] = [await freePort(), await freePort()];
      log = path.join(scratch, 'controller.log');
      const { file, args, env } = inImage([
        'gantry',
        'controller',
        'run',
        '--kubeconfig=/tmp/kubeconfig',
        `--namespace=${NAMESPACE}`,
        `--health-probe-bind-address=127.0.0.1:${healthPort}`,
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      ]);
      const output = openSync(log, 'a');
      controller = start(file, args, { env, extendEnv: false, logFd: output });
      closeSync(output);
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.ok === true,
        60_000,
        async () => `controller in the image not ready:\n${await controllerLog()}`,
      );
      // A project whose ConfigMap is templated, so the render runs the image's Python with Jinja2.
      repo = await createRepo({
        '.kluctl.yaml': 'discriminator: e2e-image\ntargets:\n  - name: default\n',
        'deployment.yaml': 'deployments:\n  - path: app\n',
        'app/configmap.yaml': [
          'apiVersion: v1',
          'kind: ConfigMap',
          'metadata:',
          '  name: rendered',
          `  namespace: ${NAMESPACE}`,
          'data:',
          '  value: "{{ \'from the image\' | upper }}"',
          '',
        ].join('\n'),
      });
      server = await startGitServer(path.dirname(repo.remote));
    });

    afterAll(async () => {
      // Deleted while the controller runs, so its finalizer is handled.
      await kubectl([
        'delete',
        'kluctldeployments.gitops.gantry.dev',
        DEPLOYMENT,
        '-n',
        NAMESPACE,
        '--ignore-not-found',
        '--timeout=120s',
      ]).catch(() => undefined);
      if (controller) await stop(controller);
      await server?.close();
      await repo?.remove();
    });

    it('deploys a KluctlDeployment from a git server until it is Ready', async () => {
      await applyObject(kluctlDeployment(NAMESPACE, DEPLOYMENT, server.url('remote.git')));
      const deployment = await waitReady(NAMESPACE, DEPLOYMENT, controllerLog, 180_000);
      expect(deployment.status.lastDeployResult.errors).toEqual([]);
      expect(await configMapValue(NAMESPACE, 'rendered')).toBe('FROM THE IMAGE');
      // This controller deployed it, not one of another test's (those watch namespaces of their own, but still).
      const entries = (await controllerLog())
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(entries).toContainEqual(expect.objectContaining({ namespace: NAMESPACE, name: DEPLOYMENT, msg: 'Performing deploy' }));
    });
  });
});

describe('Dockerfile', () => {
  /** Its instructions, continuation lines joined, comments dropped. */
  async function instructions(): Promise<Array<{ keyword: string; rest: string }>> {
    const text = (await readFile(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')).replace(/\\\n/g, ' ');
    return text
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => {
        const [keyword = '', ...rest] = line.split(/\s+/);
        return { keyword: keyword.toUpperCase(), rest: rest.join(' ') };
      });
  }

  /** `NAME=value` pairs of ARG, ENV and LABEL (values optionally double-quoted). */
  function pairs(text: string): Array<[string, string]> {
    return [...text.matchAll(/([\w.]+)=("[^"]*"|\S+)/g)].map((match) => [match[1] as string, (match[2] as string).replace(/^"|"$/g, '')]);
  }

  it('builds what npm run image builds: the same versions, packages, user, environment, entrypoint and labels', async () => {
    const all = await instructions();
    const args = new Map(all.filter((each) => each.keyword === 'ARG').flatMap((each) => pairs(each.rest)));
    const final = all.slice(all.findLastIndex((each) => each.keyword === 'FROM'));
    const expected = imageConfig(GANTRY_VERSION);

    expect(args.get('NODE_VERSION')).toBe(await nodeVersion());
    expect(args.get('DEBIAN_SUITE')).toBe(DEBIAN_SUITE);
    expect(args.get('DEBIAN_PACKAGES')?.split(' ')).toEqual(DEBIAN_PACKAGES);
    expect(args.get('GANTRY_VERSION')).toBe(GANTRY_VERSION);
    for (const name of IMAGE_TOOLS)
      expect(args.get(`${name.toUpperCase()}_VERSION`), name).toBe(TOOLS.find((tool) => tool.name === name)?.version);

    const substitute = (value: string) => value.replace(/\$\{(\w+)\}/g, (_, name: string) => args.get(name) ?? '');
    expect(final[0]?.rest).toBe('debian:${DEBIAN_SUITE}-slim');
    expect(final.filter((each) => each.keyword === 'ENV').flatMap((each) => pairs(each.rest))).toEqual(expected.env);
    const labels = final.filter((each) => each.keyword === 'LABEL').flatMap((each) => pairs(each.rest));
    expect(Object.fromEntries(labels.map(([name, value]) => [name, substitute(value)]))).toEqual(expected.labels);
    expect(final.filter((each) => each.keyword === 'USER').map((each) => each.rest)).toEqual([expected.user]);
    expect(JSON.parse(final.find((each) => each.keyword === 'ENTRYPOINT')?.rest ?? 'null')).toEqual(expected.entrypoint);
    expect(JSON.parse(final.find((each) => each.keyword === 'CMD')?.rest ?? 'null')).toEqual(expected.cmd);
  });
});
