/**
 * Budgets and replay for the fuzz tests (test/fuzz/*.test.ts), which feed fast-check's generated inputs to the
 * parsers the engine and the controller use.
 *
 * Budgets: each property runs at most `runs` times and stops early, as a success, once `ms` milliseconds have passed
 * (on a loaded machine it finds less, but never fails for being slow). It stops between runs only, and never before
 * its first run has ended: fast-check's own interruptAfterTimeLimit abandons the run under way, whose calls then go on
 * into the next property's (a YAML sandbox worker killed under it), and it fails a property that got no run in. `npm test` uses these numbers; `npm run soak`
 * sets GANTRY_SOAK=1, which multiplies both by SOAK_FACTOR.
 *
 * A failure's message is fast-check's report: the counterexample (shrunk), the error, and a line such as
 * `{ seed: -1207337424, path: "31:2:0", endOnFailure: true }`. To replay exactly that case, run the one property with
 * the seed and path from the report:
 *
 *   GANTRY_FUZZ_SEED=-1207337424 GANTRY_FUZZ_PATH=31:2:0 vitest run test/fuzz/yaml.test.ts -t 'name of the property'
 *
 * With GANTRY_FUZZ_SEED alone the property replays the whole run of that seed (and shrinks again).
 */
import fc from 'fast-check';

/** How much longer a soak runs each property than `npm test` (runs and time budget alike). */
export const SOAK_FACTOR = 20;

const soak = (process.env['GANTRY_SOAK'] ?? '') !== '' && process.env['GANTRY_SOAK'] !== '0';
const factor = soak ? SOAK_FACTOR : 1;

/** What one property may spend: at most `runs` generated cases, and at most `ms` milliseconds. */
export interface Budget {
  runs: number;
  ms: number;
}

/** The vitest timeout for a test running one property of `budget`: the budget, plus a minute for the run in progress. */
export function testTimeout(budget: Budget): number {
  return budget.ms * factor + 60_000;
}

/**
 * Checks `property` within `budget` (scaled in soak mode), prints one line with the runs done and the time taken, and
 * throws fast-check's report (counterexample, error, seed and path) when a case fails.
 */
export async function fuzz<T>(name: string, property: fc.IRawProperty<T>, budget: Budget): Promise<void> {
  const started = performance.now();
  const details = await fc.check(property, {
    numRuns: budget.runs * factor,
    plugins: [stopBetweenRunsAfter(budget.ms * factor)],
    ...replay(),
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.info(`fuzz ${name}: ${details.numRuns} runs in ${seconds} s${details.interrupted ? ' (time budget reached)' : ''}`);
  if (details.failed) {
    const error = details.errorInstance;
    const got = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
    throw new Error(`${fc.defaultReportMessage(details)}\nGot: ${got}`);
  }
}

/** A fast-check plugin ending the check, as interrupted, at the first run that would start after `ms` (at least one runs). */
function stopBetweenRunsAfter(ms: number): fc.Plugin<unknown> {
  return () => {
    const deadline = performance.now() + ms;
    let ended = 0;
    const end = <R>(outcome: R): R => {
      ended += 1;
      return outcome;
    };
    return {
      decorateRun: (nestedRun) => (value) => {
        if (ended > 0 && performance.now() >= deadline) return new fc.PreconditionFailure(true);
        const outcome = nestedRun(value);
        return outcome instanceof Promise ? outcome.then(end) : end(outcome);
      },
    };
  };
}

function replay(): Partial<fc.Parameters<unknown>> {
  const seed = process.env['GANTRY_FUZZ_SEED'];
  if (!seed) return {};
  const path = process.env['GANTRY_FUZZ_PATH'];
  return { seed: Number(seed), ...(path ? { path, endOnFailure: true } : {}) };
}

/**
 * Rejects after `ms` milliseconds unless `work` settles first, so an async hang becomes a failing case that names
 * its input instead of a test timeout; `onTimeout` then stops the work.
 */
export async function withinLimit<T>(ms: number, what: string, work: Promise<T>, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`${what} did not finish within ${ms / 1000} s`));
    }, ms);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Errors that mean our code broke (a wrong assumption about its input), as opposed to a message for the user. */
export function isCrash(error: unknown): boolean {
  return (
    !(error instanceof Error) ||
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError ||
    error instanceof SyntaxError
  );
}
