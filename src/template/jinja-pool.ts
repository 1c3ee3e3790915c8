/**
 * Renders project files and strings with the real Python Jinja2, configured as Kluctl configures it (see
 * rendering.py), in a pool of long-lived worker processes. A JavaScript Jinja2 is not an option: on Kluctl-style
 * templates it differs from Python's in value printing, scoping and filters.
 *
 * The pool must be closed with close(): idle workers keep Node's event loop alive.
 */
import { availableParallelism } from 'node:os';
import { JinjaWorker, type WorkerRequest, type WorkerResult } from './jinja-worker.ts';
import { resolvePython } from './python-env.ts';
import { TemplateError } from './template-error.ts';
import type { Tools } from '../tools.ts';

export { TemplateError };

/** Each request carries the whole context, so a batch is not cut into requests smaller than this. */
const MIN_FILES_PER_REQUEST = 4;
const STOP_GRACE_MS = 5_000;

export interface JinjaPoolOptions {
  /** Runs the Python interpreter (`python`) with the engine's environment. */
  tools: Tools;
  /** Number of worker processes, all started with the first render. Default: the number of CPUs. */
  workers?: number;
  /** Receives each line workers write to stderr (debug_print). */
  onStderr: (line: string) => void;
  /** Where Gantry may make its own Python env when `tools`' python lacks the packages (see resolvePython). */
  pythonEnvCache?: string;
  /** Receives the lines saying the Python env is being made. */
  onNotice?: (line: string) => void;
  /**
   * A folder where workers keep compiled template code for the workers of later processes: compiling is most of
   * Jinja2's time, and a CLI's workers live for one command. None: each worker keeps it in memory only.
   */
  codeCacheDir?: string;
  /**
   * Stop the workers once none has had a request for this long (ms), as release() does; the next render starts them
   * again (~100 ms). For long-lived roles, so that Python (tens of MiB per worker) is not held between syncs. None:
   * they live until release() or close().
   */
  idleMs?: number;
  /**
   * How long one file or string template may render, in seconds: past it, that entry fails with a TimeLimitError
   * naming it, and the worker takes the next request. Default: worker.py's (render_limits.py, 60 s).
   */
  timeLimitSeconds?: number;
}

/** Variables and lookup rules shared by every template of one request. */
export interface RenderScope {
  /** Project root: paths are relative to it; the default search path ends there. */
  rootDir: string;
  /** The template variables (target, args, vars, ...); must be JSON-serializable. */
  context: Readonly<Record<string, unknown>>;
  /**
   * Folders (relative to rootDir) searched in order for include/import/load_template names, replacing the default:
   * the rendered template's own folder, then each parent folder up to rootDir.
   */
  searchDirs?: readonly string[];
  /** Abandons the request: a queued one is withdrawn; one a worker is rendering finishes there unseen. */
  signal?: AbortSignal;
}

export interface RenderFilesRequest extends RenderScope {
  /** Files to render, relative to rootDir. */
  files: readonly string[];
}

export type RenderedFile = { path: string; text: string } | { path: string; error: TemplateError };

export interface StringTemplate {
  /** Names the template in errors. */
  name: string;
  source: string;
  /** Folder (relative to rootDir) whose search path applies, as if the string were a file in it. */
  dir: string;
}

export interface RenderStringsRequest extends RenderScope {
  templates: readonly StringTemplate[];
}

export type RenderedString = { name: string; text: string } | { name: string; error: TemplateError };

export type RenderStringRequest = RenderScope & StringTemplate;

interface Job {
  request: WorkerRequest;
  resolve: (results: WorkerResult[]) => void;
  reject: (error: Error) => void;
}

/**
 * A pool of Jinja2 workers, long-lived and shared by many renders (the Engine makes one, engine.ts).
 * Requests from any number of callers queue and go to the first idle worker, one request per worker at a time.
 * Its owner calls close() once (queued requests are rejected, workers exit); release() between commands is optional.
 */
export class JinjaPool {
  private readonly size: number;
  private readonly options: JinjaPoolOptions;
  private readonly onStderr: (line: string) => void;
  private readonly workers = new Set<JinjaWorker>();
  /** Exits of the workers release() stopped, which close() still waits for. */
  private readonly stopping = new Set<Promise<void>>();
  private readonly queue: Job[] = [];
  /** The tools with the Python workers run, once found (or made) and checked. */
  private pythonTools: Promise<Tools> | undefined;
  private closed = false;
  /** Releases the workers when options.idleMs pass with nothing to render. */
  private idleTimer: NodeJS.Timeout | undefined;

  /**
   * Starts nothing yet: Python is checked and every worker starts on the first render. All of them at once, since
   * a worker's Python imports take ~100 ms and a project's items follow its first template within that time.
   */
  constructor(options: JinjaPoolOptions) {
    this.size = Math.max(1, Math.floor(options.workers ?? availableParallelism()));
    this.options = options;
    this.onStderr = options.onStderr;
  }

  /**
   * Renders each file of the request, spreading a large batch over all workers.
   * @returns one entry per file, in request order, with the rendered text or the TemplateError of that file.
   * @throws Error (not TemplateError) when Python or its packages are missing, a worker dies while rendering part of
   *   the batch, or the pool is closed.
   */
  async renderFiles(request: RenderFilesRequest): Promise<RenderedFile[]> {
    const { rootDir, context, searchDirs, files, signal } = request;
    const requests = this.split(files).map((part) => this.submit({ rootDir, context, searchDirs, files: part }, signal));
    const parts = await Promise.all(requests);
    return parts.flat().map((result, index) => {
      const path = files[index] ?? '';
      return result.error ? { path, error: toTemplateError(result.error) } : { path, text: result.text ?? '' };
    });
  }

  /**
   * Renders strings as templates, in one request.
   * @returns one entry per template, in request order. @throws as renderFiles.
   */
  async renderStrings(request: RenderStringsRequest): Promise<RenderedString[]> {
    const { rootDir, context, searchDirs, templates, signal } = request;
    if (templates.length === 0) return [];
    const results = await this.submit({ rootDir, context, searchDirs, templates }, signal);
    return results.map((result, index) => {
      const name = templates[index]?.name ?? '';
      return result.error ? { name, error: toTemplateError(result.error) } : { name, text: result.text ?? '' };
    });
  }

  /**
   * Renders one string as a template.
   * @throws TemplateError when the template fails; Error as renderFiles.
   */
  async renderString(request: RenderStringRequest): Promise<string> {
    const { rootDir, context, searchDirs, name, source, dir, signal } = request;
    const [rendered] = await this.renderStrings({ rootDir, context, searchDirs, templates: [{ name, source, dir }], signal });
    if (!rendered) throw new Error(`Jinja2 worker returned no result for ${name}`);
    if ('error' in rendered) throw rendered.error;
    return rendered.text;
  }

  /**
   * Stops the idle workers without closing the pool: the next request starts new ones, as the first did. A one-shot
   * command calls it once its render is complete, so Python exits while the command works on the cluster (~50 ms
   * that it otherwise waited for at its end).
   */
  release(): void {
    for (const worker of this.workers) {
      if (worker.busy) continue;
      this.workers.delete(worker);
      const stopped = worker.stop(STOP_GRACE_MS);
      this.stopping.add(stopped);
      void stopped.finally(() => this.stopping.delete(stopped));
    }
  }

  /** Rejects queued requests, lets in-flight ones finish, and waits until every worker process has exited. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    for (const job of this.queue.splice(0)) job.reject(new Error('JinjaPool is closed'));
    await Promise.all([...[...this.workers].map((worker) => worker.stop(STOP_GRACE_MS)), ...this.stopping]);
  }

  /**
   * Cuts a batch into requests: up to two per worker (so one slow part does not leave the others idle), each of at
   * least MIN_FILES_PER_REQUEST files.
   */
  private split(files: readonly string[]): string[][] {
    if (files.length === 0) return [];
    const count = Math.min(this.size * 2, Math.ceil(files.length / MIN_FILES_PER_REQUEST));
    const size = Math.ceil(files.length / count);
    const parts: string[][] = [];
    for (let start = 0; start < files.length; start += size) parts.push(files.slice(start, start + size));
    return parts;
  }

  private submit(request: WorkerRequest, signal: AbortSignal | undefined): Promise<WorkerResult[]> {
    if (this.closed) return Promise.reject(new Error('JinjaPool is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason);
    const expected = (request.files ?? request.templates ?? []).length;
    return new Promise<WorkerResult[]>((resolve, reject) => {
      const { timeLimitSeconds } = this.options;
      const job: Job = { request: timeLimitSeconds === undefined ? request : { ...request, timeLimitSeconds }, resolve, reject };
      if (signal) {
        const abort = () => {
          const queued = this.queue.indexOf(job);
          if (queued >= 0) this.queue.splice(queued, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', abort, { once: true });
        job.resolve = (results) => (signal.removeEventListener('abort', abort), resolve(results));
        job.reject = (error) => (signal.removeEventListener('abort', abort), reject(error));
      }
      this.queue.push(job);
      clearTimeout(this.idleTimer);
      void this.dispatch();
    }).then((results) => {
      if (results.length !== expected) {
        throw new Error(`Jinja2 worker returned ${results.length} results for ${expected} templates`);
      }
      return results;
    });
  }

  /** Hands queued requests to idle workers, starting workers up to the pool size; called whenever one may be free. */
  private async dispatch(): Promise<void> {
    let tools: Tools;
    try {
      const { pythonEnvCache, onNotice = () => {} } = this.options;
      tools = await (this.pythonTools ??= resolvePython(this.options.tools, pythonEnvCache, onNotice));
    } catch (error) {
      for (const job of this.queue.splice(0)) job.reject(error as Error);
      return;
    }
    if (this.closed) return;
    if (this.queue.length === 0) return this.releaseWhenIdle();
    if (this.workers.size === 0) for (let index = 0; index < this.size; index++) this.startWorker(tools);
    while (!this.closed && this.queue.length > 0) {
      const worker = this.idleWorker() ?? this.startWorker(tools);
      const job = worker && this.queue.shift();
      if (!worker || !job) return;
      worker
        .request(job.request)
        .then(job.resolve, job.reject)
        .finally(() => void this.dispatch());
    }
  }

  /** Arms the idle release once no worker is busy and nothing is queued (options.idleMs). */
  private releaseWhenIdle(): void {
    const { idleMs } = this.options;
    if (idleMs === undefined || this.workers.size === 0 || [...this.workers].some((worker) => worker.busy)) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.queue.length === 0) this.release();
    }, idleMs);
    this.idleTimer.unref();
  }

  private idleWorker(): JinjaWorker | undefined {
    for (const worker of this.workers) if (!worker.busy) return worker;
    return undefined;
  }

  private startWorker(tools: Tools): JinjaWorker | undefined {
    if (this.workers.size >= this.size) return undefined;
    const worker = new JinjaWorker(
      tools,
      this.onStderr,
      (gone) => {
        this.workers.delete(gone);
        void this.dispatch();
      },
      this.options.codeCacheDir,
    );
    this.workers.add(worker);
    return worker;
  }
}

function toTemplateError(error: NonNullable<WorkerResult['error']>): TemplateError {
  return new TemplateError(error.file, error.line ?? undefined, error.message, error.expression ?? undefined);
}
