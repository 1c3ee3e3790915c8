/**
 * What a CLI command runs with, made by run-action.ts's withCliEngine and handed to the command's action; its own
 * module so that the flag parsing (options.ts) and the running (run-action.ts) both name it without importing each
 * other.
 */
import type { Engine } from '../engine.ts';
import type { Progress } from '../progress.ts';

/** What a CLI command runs with: the engine it owns for its lifetime, and progress on stderr. */
export interface CliRun {
  engine: Engine;
  progress: Progress;
  /** A one-shot command's stop on SIGINT and SIGTERM (see signals.ts); none for the commands a signal just kills. */
  signal?: AbortSignal | undefined;
}
