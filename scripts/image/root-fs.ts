/**
 * The root file system under Gantry in its image: Debian's minimal system with the programs Gantry runs (git and ssh
 * for sources, gpg for SOPS' PGP keys, Python 3 in a virtualenv holding the pinned Jinja2 packages), helm, kustomize
 * and sops as built by scripts/setup (tools.ts), Node.js 24 from the npm registry (the repository's `node` package),
 * and the user 65532 the image runs as. Built without a container engine: mmdebstrap installs Debian's packages
 * into a folder, chroot runs what must run inside it. The Dockerfile builds the same from debian:bookworm-slim.
 */
import { createHash } from 'node:crypto';
import { chmod, copyFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliEngineConfig } from '../../src/engine-config.ts';
import { run } from '../../src/exec.ts';
import { createPythonEnv } from '../../src/template/python-env.ts';
import { REQUIREMENTS_FILE } from '../../src/template/python-check.ts';
import { Tools } from '../../src/tools.ts';
import { toolDir } from '../setup/cache.ts';
import { TOOLS } from '../setup/tools.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The Debian release, the same as debian:bookworm-slim in the Dockerfile. */
/** mmdebstrap, from Debian's package (scripts/setup installs it): makes the root file system without a container engine. */
export const MMDEBSTRAP = '/usr/bin/mmdebstrap';
export const DEBIAN_SUITE = 'bookworm';

/** Installed with their dependencies (no recommends) on top of Debian's minimal system (Essential packages and apt). */
export const DEBIAN_PACKAGES = ['ca-certificates', 'git', 'gpg', 'gpg-agent', 'openssh-client', 'python3', 'python3-venv'] as const;

/** The tools of scripts/setup/tools.ts that Gantry runs (src/tools.ts), copied into /usr/local/bin. */
export const IMAGE_TOOLS = ['helm', 'kustomize', 'sops'] as const;

/** The virtualenv with the packages of src/template/requirements.txt; its python3 is GANTRY_PYTHON. */
export const PYTHON_ENV = '/opt/gantry/python';

/** The unprivileged user the image runs as (65532, as distroless' nonroot), with home /tmp. */
export const IMAGE_USER = { name: 'gantry', uid: 65532, gid: 65532 } as const;

/** Node.js as the repository installs it: the `node` package's preinstall fetched the platform's binary from npm. */
const NODE_PACKAGE = join(REPO_ROOT, 'node_modules', 'node');

// What debian:bookworm-slim's /etc/dpkg/dpkg.cfg.d/docker leaves out: documentation but the licences, manuals, translations.
const DPKG_EXCLUDES = [
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-exclude=/usr/share/groff/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/linda/*',
  'path-exclude=/usr/share/lintian/overrides/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/man/*',
];

// The sources of debian:bookworm-slim, security updates included.
const DEBIAN_SOURCES = [
  `deb http://deb.debian.org/debian ${DEBIAN_SUITE} main`,
  `deb http://deb.debian.org/debian ${DEBIAN_SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${DEBIAN_SUITE}-security main`,
];

/** A build step inside the root file system sees only this environment, nothing of the host's (pip's settings, proxies). */
const CHROOT_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8' };

/** Node's version (e.g. `24.21.0`), from the repository's `node` package. */
export async function nodeVersion(): Promise<string> {
  return (JSON.parse(await readFile(join(NODE_PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * 12 hex digits naming everything the root file system is built from: this file (package list, steps), the pinned
 * Python packages, Node's version and the tools' versions. Debian's package versions are not in it: a cached root
 * file system keeps the security updates of the day it was built until one of these changes or its cache entry is
 * deleted.
 */
export async function rootFsKey(): Promise<string> {
  const tools = IMAGE_TOOLS.map((name) => `${name}@${imageTool(name).version}`);
  const inputs = [await readFile(fileURLToPath(import.meta.url)), await readFile(REQUIREMENTS_FILE), await nodeVersion(), ...tools];
  const hash = createHash('sha256');
  for (const input of inputs) hash.update(input).update('\0');
  return hash.digest('hex').slice(0, 12);
}

/**
 * Builds the root file system into `dir` (which must not exist). Needs root (mmdebstrap installs as root, chroot),
 * Debian's archive keyring, the tools built by scripts/setup, and network access to deb.debian.org and PyPI.
 * @param report receives one line per step.
 * @throws CommandError naming the failed command (mmdebstrap, pip, chroot) with its stderr.
 */
export async function buildRootFs(dir: string, report: (line: string) => void): Promise<void> {
  report(`installing Debian ${DEBIAN_SUITE} (minbase) with ${DEBIAN_PACKAGES.join(', ')} (mmdebstrap) ...`);
  await run(MMDEBSTRAP, [
    '--variant=minbase',
    '--format=directory',
    `--include=${DEBIAN_PACKAGES.join(',')}`,
    ...DPKG_EXCLUDES.map((option) => `--dpkgopt=${option}`),
    DEBIAN_SUITE,
    dir,
    ...DEBIAN_SOURCES,
  ]);
  report(`creating the Python env ${PYTHON_ENV} from ${REQUIREMENTS_FILE} ...`);
  await installPythonEnv(dir, report);
  await chroot(dir, ['groupadd', '--gid', String(IMAGE_USER.gid), IMAGE_USER.name]);
  // --no-log-init: lastlog would otherwise grow a sparse file of uid × 292 bytes that a tar stores in full.
  await chroot(dir, [
    'useradd',
    '--no-log-init',
    '--uid',
    String(IMAGE_USER.uid),
    '--gid',
    String(IMAGE_USER.gid),
    '--home-dir',
    '/tmp',
    '--no-create-home',
    '--shell',
    '/usr/sbin/nologin',
    IMAGE_USER.name,
  ]);
  const bin = join(dir, 'usr', 'local', 'bin');
  for (const name of IMAGE_TOOLS) await copyProgram(join(toolDir(name, imageTool(name).version), 'bin', name), join(bin, name));
  await copyProgram(join(NODE_PACKAGE, 'bin', 'node'), join(bin, 'node'));
  report(`added ${IMAGE_TOOLS.map((name) => `${name} ${imageTool(name).version}`).join(', ')} and Node.js ${await nodeVersion()}`);
  // A container runtime provides /dev and these two; what mmdebstrap left there is the build host's.
  for (const device of await readdir(join(dir, 'dev'))) await rm(join(dir, 'dev', device), { recursive: true });
  for (const file of ['resolv.conf', 'hostname']) await rm(join(dir, 'etc', file), { force: true });
}

/**
 * Makes the virtualenv inside `dir` with the pinned packages. The wheels are downloaded on the host, whose pip knows
 * the network (proxies, certificate authorities, index mirrors), for the root file system's Python and C library,
 * then pip inside installs them without network; a wheel that does not fit that Python fails there, not at runtime.
 */
async function installPythonEnv(dir: string, report: (line: string) => void): Promise<void> {
  const [major, minor, glibc, machine] = (
    await chroot(dir, [
      'python3',
      '-c',
      "import os, platform, sys; print(*sys.version_info[:2], os.confstr('CS_GNU_LIBC_VERSION').split()[1], platform.machine())",
    ])
  ).split(/\s+/);
  const glibcMinor = Number(glibc?.split('.')[1]);
  // pip matches platform tags exactly: every manylinux the C library satisfies, in the current and the legacy names.
  const platforms = [
    ...Array.from({ length: glibcMinor - 4 }, (_, index) => `manylinux_2_${glibcMinor - index}_${machine}`),
    ...['manylinux2014', 'manylinux2010', 'manylinux1'].map((legacy) => `${legacy}_${machine}`),
  ];
  const wheels = '/tmp/gantry-wheels';
  await mkdir(join(dir, wheels));
  await copyFile(REQUIREMENTS_FILE, join(dir, wheels, 'requirements.txt'));
  const host = cliEngineConfig();
  const hostPython = await createPythonEnv(new Tools(host.tools, host.childEnv), host.cacheDir, report);
  await run(hostPython, [
    '-m',
    'pip',
    'download',
    '--no-input',
    '--disable-pip-version-check',
    '--only-binary=:all:',
    '--implementation=cp',
    `--python-version=${major}.${minor}`,
    `--abi=cp${major}${minor}`,
    ...platforms.map((platform) => `--platform=${platform}`),
    `--dest=${join(dir, wheels)}`,
    `--requirement=${REQUIREMENTS_FILE}`,
  ]);
  const python = `${PYTHON_ENV}/bin/python3`;
  const pip = [python, '-m', 'pip', '--no-input', '--disable-pip-version-check', '--no-cache-dir'];
  await chroot(dir, ['python3', '-m', 'venv', PYTHON_ENV]);
  await chroot(dir, [...pip, 'install', '--no-index', `--find-links=${wheels}`, `--requirement=${wheels}/requirements.txt`]);
  // Nothing installs into the env at runtime (the root file system is read-only there); pip and setuptools would be dead weight.
  await chroot(dir, [...pip, 'uninstall', '--yes', 'pip', 'setuptools']);
  await rm(join(dir, wheels), { recursive: true });
}

async function chroot(dir: string, command: string[]): Promise<string> {
  return (await run('chroot', [dir, ...command], { env: CHROOT_ENV, extendEnv: false })).stdout.trim();
}

async function copyProgram(from: string, to: string): Promise<void> {
  await copyFile(from, to);
  await chmod(to, 0o755);
}

function imageTool(name: (typeof IMAGE_TOOLS)[number]): { version: string } {
  const tool = TOOLS.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`scripts/setup/tools.ts has no tool ${name}`);
  return tool;
}
