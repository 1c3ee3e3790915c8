/**
 * One long-lived Python process running worker.py, driven one request at a time over its stdin/stdout
 * (the JSON-lines protocol described in README.md).
 */
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import type { Tools } from '../tools.ts';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker.py', import.meta.url));
const STDERR_TAIL_LINES = 30;

/** A request as the worker reads it, without the id the worker assigns. */
export interface WorkerRequest {
  rootDir: string;
  context: unknown;
  searchDirs?: readonly string[];
  files?: readonly string[];
  templates?: readonly { name: string; source: string; dir: string }[];
  /** Each entry's render time limit in seconds (worker.py's default when absent). */
  timeLimitSeconds?: number;
}

/** One entry of a response: `path` for a file, `name` for a string template; `text` or `error`. */
export interface WorkerResult {
  path?: string;
  name?: string;
  text?: string;
  error?: { file: string; line: number | null; message: string; expression: string | null };
}

interface WorkerResponse {
  id: number | null;
  results?: WorkerResult[];
  error?: string;
}

interface InFlight {
  id: number;
  resolve: (results: WorkerResult[]) => void;
  reject: (error: Error) => void;
}

/**
 * A handle on one worker process, used by JinjaPool only: one request at a time (check `busy`), results in request
 * order. Whoever starts it calls stop() or lets it die; `onExit` reports either. A malformed line on stdout kills the
 * process and fails the request in flight, rather than pair answers with the wrong request.
 */
export class JinjaWorker {
  /** Settles when the process has exited, for whatever reason. */
  readonly exited: Promise<void>;
  private readonly process: ChildProcess;
  private readonly stderrTail: string[] = [];
  private inFlight: InFlight | undefined;
  private lastId = 0;
  private alive = true;

  /**
   * Starts the process (Python imports take ~100 ms, during which requests already queue in its stdin).
   * @param tools runs the Python interpreter, assumed checked (see checkPython), with the engine's environment.
   * @param onStderr receives each line the worker writes to stderr (debug_print output, warnings).
   * @param onExit called once when the process is gone, after any in-flight request was rejected.
   * @param codeCacheDir where compiled template code is kept for later workers (none: in this worker's memory only).
   */
  constructor(tools: Tools, onStderr: (line: string) => void, onExit: (worker: JinjaWorker) => void, codeCacheDir?: string) {
    // -B: no __pycache__ written next to the sources.
    this.process = tools.start('python', ['-B', WORKER_SCRIPT, ...(codeCacheDir ? ['--code-cache', codeCacheDir] : [])]);
    const { stdin, stdout, stderr } = this.process;
    if (!stdin || !stdout || !stderr) throw new Error('Jinja2 worker started without pipes');
    // A write to a worker that just died fails with EPIPE; the exit handler below reports it.
    stdin.on('error', () => {});
    createInterface({ input: stdout, crlfDelay: Infinity }).on('line', (line) => this.receive(line));
    createInterface({ input: stderr, crlfDelay: Infinity }).on('line', (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      onStderr(line);
    });
    this.exited = new Promise((resolve) => {
      const gone = (how: string): void => {
        if (!this.alive) return;
        this.alive = false;
        this.failInFlight(`Jinja2 worker (pid ${this.process.pid ?? '?'}) ${how} while rendering`);
        onExit(this);
        resolve();
      };
      // 'close' comes after stdout and stderr are drained, so a last response or stderr line is never lost.
      this.process.on('close', (code, signal) => gone(signal ? `was killed by ${signal}` : `exited with code ${code}`));
      // Besides a failed spawn, 'error' only reports a failed kill(), which leaves the process running.
      this.process.on('error', (error) => {
        if (this.process.pid === undefined) gone(`could not be started (${error.message})`);
      });
    });
  }

  /** True while a request is being rendered; a worker takes the next one only when it is idle. */
  get busy(): boolean {
    return this.inFlight !== undefined;
  }

  /**
   * Sends `request` and resolves with its results, in request order.
   * @throws Error when the worker is busy or dead, dies while rendering (the message carries its stderr tail),
   *   or rejects the request as malformed. Template errors are not thrown: they are results.
   */
  request(request: WorkerRequest): Promise<WorkerResult[]> {
    if (!this.alive) return Promise.reject(new Error('Jinja2 worker is not running'));
    if (this.inFlight) return Promise.reject(new Error('Jinja2 worker is busy'));
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.inFlight = { id, resolve, reject };
      this.process.stdin?.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }

  /** Closes stdin so the worker exits after its current request; kills it if it has not exited in `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.process.stdin?.end();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  private receive(line: string): void {
    let response: WorkerResponse;
    try {
      response = JSON.parse(line) as WorkerResponse;
    } catch {
      this.abort(`Jinja2 worker wrote a line that is not a response: ${line.slice(0, 200)}`);
      return;
    }
    const inFlight = this.inFlight;
    if (!inFlight || response.id !== inFlight.id) {
      this.abort(`Jinja2 worker answered request ${response.id}, expected ${inFlight?.id ?? 'none'}`);
      return;
    }
    this.inFlight = undefined;
    if (response.results) inFlight.resolve(response.results);
    else inFlight.reject(new Error(`Jinja2 worker refused the request: ${response.error ?? 'no results'}`));
  }

  /** The protocol is out of step: fail the request and replace the process rather than guess. */
  private abort(reason: string): void {
    this.failInFlight(reason);
    this.process.kill('SIGKILL');
  }

  private failInFlight(reason: string): void {
    const inFlight = this.inFlight;
    if (!inFlight) return;
    this.inFlight = undefined;
    const tail = this.stderrTail.length > 0 ? `; its stderr ended with:\n${this.stderrTail.join('\n')}` : '';
    inFlight.reject(new Error(`${reason}${tail}`));
  }
}
