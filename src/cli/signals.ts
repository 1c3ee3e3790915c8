/**
 * How gantry's commands end on SIGINT (Ctrl-C) and SIGTERM. The long-running ones (controller, server, agent) log
 * it, run their own `stop`, and return, so the process exits once nothing is left running. The one-shot ones
 * (deploy, prune, delete, diff, validate, render) abort their work (stopOnSignals), print what they did, and exit
 * with 128 + the signal's number, as a shell reports a program the signal killed; a second signal exits at once.
 */
import { constants } from 'node:os';
import type { Logger } from '../logger.ts';

export async function runUntilSignalled(log: Logger, stop: () => Promise<void>): Promise<void> {
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'shutting down');
  await stop();
}

type StopSignal = 'SIGINT' | 'SIGTERM';
const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM'];

/**
 * Set by bin/gantry.js in the process it re-launches on a newer Node, to which it forwards the signals it gets. A
 * terminal's Ctrl-C reaches both processes, so the child gets that SIGINT twice, a few milliseconds apart.
 */
const SIGNALS_FORWARDED_ENV = 'GANTRY_SIGNALS_FORWARDED';
/** How far apart the two copies of one signal may come and still count once, in a re-launched process. */
const SAME_SIGNAL_MS = 200;

/** Why a one-shot command stopped: the reason its signal aborts with. */
export class Interrupted extends Error {
  readonly signal: StopSignal;
  /** 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM. */
  readonly exitCode: number;

  constructor(signal: StopSignal) {
    super(`interrupted by ${signal} before the command finished`);
    this.name = 'Interrupted';
    this.signal = signal;
    this.exitCode = 128 + constants.signals[signal];
  }
}

/**
 * Makes the first SIGINT or SIGTERM abort the returned signal with an Interrupted reason (saying so on stderr): the
 * command stops sending, ends its waits, releases the target lock, removes its temporary folders and prints its
 * partial result. Any later SIGINT or SIGTERM exits at once with the first one's code. The handlers stay for the
 * rest of the process, which ends with the command.
 */
export function stopOnSignals(): AbortSignal {
  const controller = new AbortController();
  const forwarded = process.env[SIGNALS_FORWARDED_ENV] === '1';
  let first: { signal: StopSignal; at: number } | undefined;
  const onSignal = (signal: StopSignal): void => {
    const now = performance.now();
    if (!first) {
      first = { signal, at: now };
      process.stderr.write(`${signal}: stopping (a second SIGINT or SIGTERM exits at once)\n`);
      controller.abort(new Interrupted(signal));
    } else if (!(forwarded && signal === first.signal && now - first.at < SAME_SIGNAL_MS)) {
      process.stderr.write(`${signal} again: exiting at once\n`);
      process.exit((controller.signal.reason as Interrupted).exitCode);
    }
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => onSignal(signal));
  return controller.signal;
}

/** The exit code of a one-shot command that `signal` (from stopOnSignals) stopped, else undefined. */
export function interruptedExitCode(signal: AbortSignal): number | undefined {
  return signal.aborted && signal.reason instanceof Interrupted ? signal.reason.exitCode : undefined;
}
