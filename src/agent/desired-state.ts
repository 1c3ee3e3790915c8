/**
 * The agent's last desired state on its disk: the services the server last listed, so an agent that restarts while
 * the server is away still knows what its cluster should run and keeps repairing drift from the sources in its
 * disk cache. Configuration values are secrets, so the file is sealed (AES-256-GCM, crypto/secret-box.ts) with a key
 * derived from the cluster's deploy token: only the holder of the token can read it. A rotation seals the file again
 * with the new token (rekey); a file another token sealed is not used.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentService } from '../api/agent.ts';
import { type SealContext, SecretBox } from '../crypto/secret-box.ts';

/** The one thing the agent seals: its file's key (from the deploy token) seals nothing else, so one fixed place. */
const DESIRED_STATE_PLACE: SealContext = { table: 'agent', column: 'desired-state', row: 'services' };

/**
 * The sealed file of one agent and deploy token: save() after each listing from the server (an unchanged list is
 * not written again), load() when the server cannot be reached and nothing was listed since the agent started. One
 * instance per file and process. Writes are queued one after another, since the poll loop saves while a rotation
 * (the ping loop) may be sealing the file again. Holds nothing to close.
 */
export class DesiredState {
  readonly #file: string;
  #box: SecretBox;
  /** What the file holds, once the queued writes are done. */
  #saved: string | undefined;
  #writes: Promise<void> = Promise.resolve();

  /** @param file e.g. `<dataDir>/services.sealed`. */
  constructor(file: string, deployToken: string) {
    this.#file = file;
    this.#box = boxOf(deployToken);
  }

  /** Seals the file with a rotated deploy token from now on, and seals what was saved last again with it. */
  async rekey(deployToken: string): Promise<void> {
    this.#box = boxOf(deployToken);
    const saved = this.#saved;
    if (saved !== undefined) await this.#write(saved);
  }

  /**
   * The services saved last, or undefined when there is no file.
   * @throws Error naming the file when it cannot be opened (another token sealed it, or it is damaged).
   */
  async load(): Promise<AgentService[] | undefined> {
    const sealed = await readFile(this.#file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (sealed === undefined) return undefined;
    try {
      const services = this.#box.openJson<AgentService[]>(sealed, DESIRED_STATE_PLACE);
      this.#saved = JSON.stringify(services);
      return services;
    } catch (error) {
      throw new Error(`${this.#file}: cannot be opened with this deploy token: ${(error as Error).message}`);
    }
  }

  /** Saves the services when they differ from what was saved last; the write replaces the file whole. */
  async save(services: readonly AgentService[]): Promise<void> {
    const text = JSON.stringify(services);
    if (text !== this.#saved) await this.#write(text);
  }

  /** Queues a write of `text`, sealed with the key of the moment it is written. */
  #write(text: string): Promise<void> {
    this.#saved = text;
    const write = this.#writes.then(async () => {
      await mkdir(path.dirname(this.#file), { recursive: true });
      const temp = `${this.#file}.${process.pid}.partial`;
      await writeFile(temp, this.#box.seal(text, DESIRED_STATE_PLACE), { mode: 0o600 });
      await rename(temp, this.#file);
    });
    // A failed write is the caller's to report; the next save tries again, and the next queued write still runs.
    this.#writes = write.catch(() => {
      if (this.#saved === text) this.#saved = undefined;
    });
    return write;
  }
}

function boxOf(deployToken: string): SecretBox {
  return new SecretBox(createHash('sha256').update('gantry-agent-desired-state\0').update(deployToken).digest());
}
