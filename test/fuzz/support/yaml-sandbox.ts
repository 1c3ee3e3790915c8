/**
 * The YAML codec (src/yaml.ts) behind a worker thread with a time and a memory limit: parsing is synchronous, so a
 * call that loops, goes quadratic on a large input or allocates without bound would otherwise hang or kill the test
 * run instead of failing with its input.
 */
import { Worker } from 'node:worker_threads';

/** How a call ended: its value, or the class name and message of what it threw. */
export type Outcome = { value: unknown } | { error: { name: string; message: string } };

type Call = 'parseYaml' | 'parseYamlDocuments' | 'replaceScalar' | 'toYaml' | 'toYamlDocuments' | 'toYamlJson';

/**
 * The worker's limits: a heap far above what a parse of the generated inputs needs and far below the machine's
 * memory; the stack of Node's main thread (about 1 MB), where the engine parses, rather than a worker's 4 MB, so
 * nesting fails here where it fails there.
 */
const LIMITS = { maxOldGenerationSizeMb: 1024, stackSizeMb: 1 };

export class YamlSandbox {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly limitMs: number;

  /** @param limitMs how long one call may take before it counts as a hang (ms). */
  constructor(limitMs: number) {
    this.limitMs = limitMs;
  }

  /**
   * Runs `call(...args)` in the worker.
   * @throws Error naming the call when it takes longer than the limit or the worker dies (out of memory); the
   *   worker is then replaced for the next call.
   */
  async run(call: Call, ...args: unknown[]): Promise<Outcome> {
    const worker = (this.worker ??= new Worker(new URL('./yaml-worker.ts', import.meta.url), {
      resourceLimits: LIMITS,
    }));
    const id = this.nextId++;
    return new Promise<Outcome>((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('messageerror', onError);
        worker.off('exit', onExit);
        outcome();
      };
      const abandon = (reason: string) => {
        this.worker = undefined;
        void worker.terminate();
        reject(new Error(`${call} ${reason}`));
      };
      const timer = setTimeout(() => settle(() => abandon(`did not return within ${this.limitMs / 1000} s`)), this.limitMs);
      const onMessage = ({ id: answered, ...outcome }: { id: number } & Outcome) => {
        if (answered === id) settle(() => resolve(outcome as Outcome));
      };
      const onError = (error: Error) => settle(() => abandon(`killed its worker: ${error.message}`));
      // The worker ended under the call: closed (a call the time budget cut off) or killed.
      const onExit = (code: number) => settle(() => reject(new Error(`${call}: the worker exited with code ${code}`)));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('messageerror', onError);
      worker.on('exit', onExit);
      worker.postMessage({ id, call, args });
    });
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = undefined;
  }
}
