/**
 * Progress of long operations, one line per step on stderr (stdout stays clean for `-o json` and `render`).
 * Lines carry the item they concern as a prefix, so parallel items stay readable.
 */
export interface Progress {
  /** Reports a step; `scope` is the item or phase it belongs to. */
  step(scope: string, message: string): void;
}

export function stderrProgress(): Progress {
  const started = Date.now();
  return {
    step(scope, message) {
      const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
      process.stderr.write(`[${seconds}s] ${scope}: ${message}\n`);
    },
  };
}

/** `progress` with every message masked (the values of sensitive vars, see src/project/sensitive.ts). */
export function maskedProgress(progress: Progress, masker: { mask(text: string): string }): Progress {
  return { step: (scope, message) => progress.step(scope, masker.mask(message)) };
}
