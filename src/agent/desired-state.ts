/**
 * The agent's last desired state on its disk: the services the server last listed, so an agent that restarts while
 * the server is away still knows what its cluster should run and keeps repairing drift from the sources in its
 * disk cache. Configuration values are secrets, so the file is sealed (AES-256-GCM, crypto/secret-box.ts) with a key
 * derived from the cluster's deploy token: only the holder of the token can read it, and after a token rotation the
 * old file is simply not used.
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
 * instance per file and process; calls are not serialized, so the caller awaits each save before the next. Holds
 * nothing to close.
 */
export class DesiredState {
  readonly #file: string;
  readonly #box: SecretBox;
  #saved: string | undefined;

  /** @param file e.g. `<dataDir>/services.sealed`. */
  constructor(file: string, deployToken: string) {
    this.#file = file;
    this.#box = new SecretBox(createHash('sha256').update('gantry-agent-desired-state\0').update(deployToken).digest());
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
    if (text === this.#saved) return;
    await mkdir(path.dirname(this.#file), { recursive: true });
    const temp = `${this.#file}.${process.pid}.partial`;
    await writeFile(temp, this.#box.seal(text, DESIRED_STATE_PLACE), { mode: 0o600 });
    await rename(temp, this.#file);
    this.#saved = text;
  }
}
