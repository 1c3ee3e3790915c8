/**
 * The npm package outside this repository: packed with `npm pack`, installed with `npm install -g` into a temporary
 * prefix, and run as a user would, with a PATH that has Node 24, helm and kustomize but no .cluster/bin and no Python
 * with Jinja2. Gantry makes its own Python env in the user's cache on first use and renders a Kluctl example exactly
 * as this repository's sources do; a missing python3 or helm is said with what to install.
 */
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packGantry } from '../../scripts/package/pack.ts';
import { run } from '../../src/exec.ts';
import { parseYamlDocuments } from '../../src/yaml.ts';
import { gantry } from '../support/cli.ts';
import { example, REPO_ROOT } from '../support/fixtures.ts';

const PROJECT = 'microservices-demo/3-templating-and-multi-env';
const packageJson = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };

let scratch: string;
let prefix: string;
/** Holds node (24), helm, kustomize and git, each linked from where this machine has it. */
let toolsDir: string;

/** Runs the installed `gantry` with only the environment given (PATH: the prefix's bin, then `pathDirs`). */
async function installedGantry(args: readonly string[], env: { cacheDir: string; pathDirs: readonly string[] }) {
  const result = await execa(path.join(prefix, 'bin', 'gantry'), args, {
    cwd: scratch,
    env: {
      HOME: path.join(scratch, 'home'),
      PATH: [path.join(prefix, 'bin'), ...env.pathDirs].join(path.delimiter),
      GANTRY_CACHE_DIR: env.cacheDir,
    },
    extendEnv: false,
    reject: false,
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** Links `program` from this process's PATH (which starts with .cluster/bin) into `dir`. */
async function linkProgram(dir: string, program: string, target?: string): Promise<void> {
  const resolved = target ?? (await run('sh', ['-c', `command -v ${program}`])).stdout.trim();
  await symlink(resolved, path.join(dir, program));
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-npm-package-'));
  prefix = path.join(scratch, 'prefix');
  toolsDir = path.join(scratch, 'tools');
  await mkdir(toolsDir);
  await mkdir(path.join(scratch, 'home'));
  const tarball = await packGantry(scratch, (line) => console.error(`npm-package: ${line}`));
  await run('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', tarball]);
  await linkProgram(toolsDir, 'node', process.execPath);
  for (const program of ['helm', 'kustomize', 'git']) await linkProgram(toolsDir, program);
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('the npm package, installed with npm install -g', { timeout: 180_000 }, () => {
  it('ships the compiled CLI, not the TypeScript sources', async () => {
    const installed = path.join(prefix, 'lib', 'node_modules', 'gantry');
    const files = (await run('find', [installed, '-maxdepth', '1', '-mindepth', '1', '-printf', '%f\n'])).stdout.split('\n');
    expect(files).toEqual(expect.arrayContaining(['bin', 'lib', 'install', 'web', 'package.json']));
    expect(files).not.toContain('src');
  });

  it('prints its version, and the versions of the programs it found, with a Python env still to be made', async () => {
    const cacheDir = path.join(scratch, 'cache-version');
    const short = await installedGantry(['--version'], { cacheDir, pathDirs: [toolsDir, '/usr/bin', '/bin'] });
    expect(short.stdout.trim()).toBe(packageJson.version);

    const { code, stdout } = await installedGantry(['version', '-o', 'json'], { cacheDir, pathDirs: [toolsDir, '/usr/bin', '/bin'] });
    expect(code).toBe(0);
    const versions = JSON.parse(stdout) as Record<string, any>;
    expect(versions['gantry']).toBe(packageJson.version);
    expect(versions['node']).toMatch(/^v2[4-9]\./);
    expect(versions['helm'].version).toMatch(/^v4\./);
    expect(versions['kustomize'].version).toMatch(/^v5\./);
    expect(versions['python']).toEqual({ path: expect.stringContaining(cacheDir), pending: expect.stringContaining('first render') });
  });

  it('makes its Python env in the cache on first use and renders the example as the sources do', async () => {
    const cacheDir = path.join(scratch, 'cache-render');
    const args = ['render', '-t', 'test', '--project-dir', example(PROJECT), '--offline-kubernetes'];
    const first = await installedGantry(args, { cacheDir, pathDirs: [toolsDir, '/usr/bin', '/bin'] });
    expect(first.stderr).toContain("creating Gantry's Python env for Jinja2 templating in");
    expect(first.code, first.stderr).toBe(0);

    const fromSources = await gantry(args);
    expect(fromSources.code, fromSources.stderr).toBe(0);
    const rendered = parseYamlDocuments(first.stdout, 'render');
    expect(rendered.length).toBeGreaterThan(20);
    expect(rendered).toEqual(parseYamlDocuments(fromSources.stdout, 'render'));

    const second = await installedGantry(args, { cacheDir, pathDirs: [toolsDir, '/usr/bin', '/bin'] });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain('creating');

    const { stdout } = await installedGantry(['version', '-o', 'json'], { cacheDir, pathDirs: [toolsDir, '/usr/bin', '/bin'] });
    const { python } = JSON.parse(stdout) as { python: { path: string; jinja2: string } };
    expect(python.path.startsWith(cacheDir)).toBe(true);
    expect(python.jinja2).toBe('3.1.6');
  });

  it('says to install python3 when there is none, and helm and kustomize when they are missing', async () => {
    const bare = path.join(scratch, 'bare');
    await mkdir(bare);
    await linkProgram(bare, 'node', process.execPath);
    await linkProgram(bare, 'git');
    const env = { cacheDir: path.join(scratch, 'cache-bare'), pathDirs: [bare] };

    const render = await installedGantry(['render', '-t', 'test', '--project-dir', example(PROJECT), '--offline-kubernetes'], env);
    expect(render.code).toBe(1);
    expect(render.stderr).toContain('python3 was not found on PATH');
    expect(render.stderr).toContain('apt-get install python3 python3-venv');
    expect(render.stdout).toBe('');

    const { stdout } = await installedGantry(['version'], env);
    expect(stdout).toMatch(/^helm +missing: helm was not found on PATH: install Helm 4 \(https:\/\/helm\.sh\/docs\/intro\/install\/\)/m);
    expect(stdout).toMatch(/^kustomize +missing: kustomize was not found on PATH: install kustomize/m);
  });
});
