/**
 * A network namespace of the test's own, joined to this machine's by a veth pair on a /30 of 10.213.0.0/16: where a
 * test host listens when a real component must reach it at an address that is not loopback (the API server proxies to
 * no loopback pod IP), with every packet staying between two interfaces the test made. Needs root and iproute2.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { run } from '../../src/exec.ts';

export interface NetworkNamespace {
  /** The namespace's address, where its programs listen. */
  address: string;
  /** Starts `command` inside the namespace, its output piped. */
  spawn(command: string, args: readonly string[], env?: Record<string, string>): ChildProcess;
  /** Deletes the namespace and its veth pair (ending what still runs in it is the caller's). */
  remove(): Promise<void>;
}

/** Makes a namespace with a fresh name and /30. @throws the `ip` command's error (not root, no iproute2). */
export async function createNetworkNamespace(): Promise<NetworkNamespace> {
  const id = randomBytes(3).toString('hex');
  const name = `gantry-${id}`;
  // Interface names have at most 15 characters.
  const [host, inside] = [`gn${id}h`, `gn${id}n`];
  const bytes = randomBytes(2);
  const base = `10.213.${bytes[0]}`;
  const first = (bytes[1]! % 64) * 4;
  const [hostAddress, address] = [`${base}.${first + 1}`, `${base}.${first + 2}`];
  const ip = (...args: string[]) => run('ip', args);
  await ip('netns', 'add', name);
  try {
    await ip('link', 'add', host, 'type', 'veth', 'peer', 'name', inside);
    await ip('link', 'set', inside, 'netns', name);
    await ip('addr', 'add', `${hostAddress}/30`, 'dev', host);
    await ip('link', 'set', host, 'up');
    await ip('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/30`, 'dev', inside);
    await ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'up');
  } catch (error) {
    await ip('link', 'del', host).catch(() => undefined);
    await ip('netns', 'del', name);
    throw error;
  }
  return {
    address,
    spawn: (command, args, env = {}) =>
      spawn('ip', ['netns', 'exec', name, command, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] }),
    async remove() {
      // Deleting one end of a veth pair deletes both.
      await ip('link', 'del', host).catch(() => undefined);
      await ip('netns', 'del', name);
    },
  };
}
