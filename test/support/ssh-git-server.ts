/**
 * A real SSH git server on 127.0.0.1 for tests (the machine has the ssh client but no sshd): the small Go program in
 * ./ssh-git-server/ (golang.org/x/crypto/ssh, running the real `git upload-pack`/`git receive-pack`), with a fresh
 * ed25519 host key and one authorized client key per server. The binary is built once per machine into the tool
 * cache (`<cache>/tools/ssh-git-server-<hash of its sources>/bin/`), as scripts/setup builds the other Go tools.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, start } from '../../src/exec.ts';
import { populateAtomically } from '../../src/cache-entry.ts';
import { pathExists, toolDir } from '../../scripts/setup/cache.ts';

const SOURCE_DIR = path.join(import.meta.dirname, 'ssh-git-server');
const SOURCE_FILES = ['main.go', 'go.mod', 'go.sum'];
// The flags scripts/setup/go-build.ts builds every tool with, so this build shares Go's build cache with those.
const GO_ENV = { CGO_ENABLED: '0', GOTOOLCHAIN: 'local' };

export interface SshGitServer {
  /** 127.0.0.1:<port> */
  address: string;
  /** `ssh://git@127.0.0.1:<port>/<repository>` for a repository given relative to the root (e.g. `remote.git`) or as an absolute path inside it. */
  url(repository: string): string;
  /** The server's host key as a known_hosts line: `[127.0.0.1]:<port> ssh-ed25519 AAAA...`. */
  knownHosts: string;
  /** The authorized client's private key (OpenSSH PEM, no passphrase), as a Secret's `identity` holds it. */
  clientPrivateKey: string;
  /** Everything the server wrote to stderr so far (handshake failures, refused requests). */
  log(): string;
  /** Stops the server and removes its keys. */
  close(): Promise<void>;
}

export interface SshKeyPair {
  /** OpenSSH private key, no passphrase. */
  privateKey: string;
  /** `ssh-ed25519 AAAA... <comment>` */
  publicKey: string;
}

/**
 * Builds the server into the tool cache unless it is there already, and returns the binary's path.
 * @param report receives a line when a build happens (with its duration).
 * @throws CommandError (naming the go command, with its stderr) when go is missing or the build fails.
 */
export async function buildSshGitServer(report: (line: string) => void = () => undefined): Promise<string> {
  const hash = createHash('sha256');
  for (const file of SOURCE_FILES)
    hash
      .update(`${file}\0`)
      .update(await readFile(path.join(SOURCE_DIR, file)))
      .update('\0');
  const dir = toolDir('ssh-git-server', hash.digest('hex').slice(0, 12));
  const binary = path.join(dir, 'bin', 'ssh-git-server');
  if (await pathExists(binary)) return binary;
  const started = performance.now();
  await populateAtomically(dir, async (tempDir) => {
    const flags = ['-trimpath', '-buildvcs=false', '-ldflags=-s -w'];
    await run('go', ['build', ...flags, '-o', path.join(tempDir, 'bin', 'ssh-git-server'), '.'], { cwd: SOURCE_DIR, env: GO_ENV });
  });
  report(`built ssh-git-server into ${dir} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return binary;
}

/**
 * A new ed25519 key pair from ssh-keygen (e.g. a host key that is not the server's, for known_hosts that must fail).
 * @throws CommandError when ssh-keygen is missing or fails.
 */
export async function createSshKey(comment = 'gantry-e2e'): Promise<SshKeyPair> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-ssh-key-'));
  try {
    const file = await keygen(dir, 'key', comment);
    return { privateKey: await readFile(file, 'utf8'), publicKey: (await readFile(`${file}.pub`, 'utf8')).trim() };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Starts a server for the bare repositories below `root` on a free 127.0.0.1 port (the server picks it, so there is
 * no race with other listeners) and waits until it accepts connections.
 * @throws CommandError when the build or ssh-keygen fails; Error with the server's stderr when it exits or does not
 *   report its address within 15 s.
 */
export async function startSshGitServer(root: string): Promise<SshGitServer> {
  const binary = await buildSshGitServer((line) => console.error(`ssh-git-server: ${line}`));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-ssh-git-server-'));
  try {
    const hostKey = await keygen(dir, 'host_key', 'gantry-e2e-host');
    const clientKey = await keygen(dir, 'client_key', 'gantry-e2e-client');
    const authorizedKeys = path.join(dir, 'authorized_keys');
    await writeFile(authorizedKeys, await readFile(`${clientKey}.pub`));
    const child = start(binary, [
      '-listen',
      '127.0.0.1:0',
      '-host-key',
      hostKey,
      '-authorized-keys',
      authorizedKeys,
      '-root',
      root,
      '-exit-with-stdin',
    ]);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      // Bounded: a long test run with many failed handshakes must not grow this without limit.
      stderr = (stderr + chunk).slice(-64 * 1024);
    });
    const address = await readAddress(child, () => stderr).catch(async (error: unknown) => {
      await stop(child);
      throw error;
    });
    const port = address.slice(address.lastIndexOf(':') + 1);
    const [keyType, keyData] = (await readFile(`${hostKey}.pub`, 'utf8')).trim().split(/\s+/);
    const rootDir = path.resolve(root);
    return {
      address,
      url: (repository) => {
        const relative = path.isAbsolute(repository) ? path.relative(rootDir, repository) : repository;
        return `ssh://git@${address}/${relative.split(path.sep).join('/')}`;
      },
      knownHosts: `[127.0.0.1]:${port} ${keyType} ${keyData}`,
      clientPrivateKey: await readFile(clientKey, 'utf8'),
      log: () => stderr,
      async close() {
        await stop(child);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Writes `<dir>/<name>` and `<dir>/<name>.pub` and returns the private key's path. */
async function keygen(dir: string, name: string, comment: string): Promise<string> {
  const file = path.join(dir, name);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
  return file;
}

/** The first stdout line, which the server prints once it listens. */
function readAddress(child: ChildProcess, stderr: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    const fail = (reason: string) => {
      clearTimeout(timer);
      reject(new Error(`ssh-git-server ${reason}${stderr() ? `:\n${stderr().trimEnd()}` : ''}`));
    };
    const timer = setTimeout(() => fail('did not report its address within 15 s'), 15_000);
    child.once('error', (error) => fail(`could not be started (${error.message})`));
    // 'close' rather than 'exit': by then stderr is read to the end, so the message has the server's reason.
    child.once('close', (code, signal) => fail(`exited (${signal ?? `code ${code}`}) before listening`));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const newline = stdout.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      resolve(stdout.slice(0, newline).trim());
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
