/**
 * The values of sensitive vars, as kluctl's variable-sources docs mark them (sops-encrypted files, Secrets, cluster
 * objects, environment variables, or any source with `sensitive: true`): collected while a target loads, and masked
 * in everything Gantry shows of a run — result diffs, warnings and errors, status, logs and error messages. Kluctl
 * keeps them out of the results it stores; Gantry stores no vars, so it masks where they can still surface: in the
 * text of objects and messages. Values shorter than MIN_LENGTH are not masked: masking `on` or `42` would blank out
 * unrelated text and hide nothing.
 */
import { ProblemList, problemsOf } from '../problems.ts';
import { isPlainObject } from '../values.ts';

export const MASK = '*****';
const MIN_LENGTH = 4;

/**
 * The set of a target's sensitive values and the masking of them: `add` while the target loads, then `mask` text
 * and `maskError` errors before they are shown or stored. Values are plain strings (numbers as their decimal text),
 * matched literally, longest first, anywhere in the text; values shorter than MIN_LENGTH (4 characters) are ignored.
 */
export class SensitiveValues {
  private readonly values = new Set<string>();
  private pattern: RegExp | undefined;

  /** @param values known sensitive values (a RenderedTarget's `sensitiveValues`). */
  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  /** Every string (and number) leaf of `value` becomes sensitive. */
  add(value: unknown): void {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') {
      const text = String(value);
      if (text.length >= MIN_LENGTH && !this.values.has(text)) {
        this.values.add(text);
        this.pattern = undefined;
      }
    } else if (Array.isArray(value)) for (const entry of value) this.add(entry);
    else if (isPlainObject(value)) for (const entry of Object.values(value)) this.add(entry);
  }

  /** The values, longest first (what mask replaces first). */
  list(): string[] {
    return [...this.values].sort((a, b) => b.length - a.length || a.localeCompare(b));
  }

  /** `text` with every sensitive value replaced by `*****`. */
  mask(text: string): string {
    if (this.values.size === 0) return text;
    this.pattern ??= new RegExp(this.list().map(escapeRegExp).join('|'), 'g');
    return text.replace(this.pattern, MASK);
  }

  /** An error whose message (or each problem of a ProblemList) is masked; the error itself when nothing was. */
  maskError(error: unknown): unknown {
    const problems = problemsOf(error);
    const masked = problems.map((problem) => this.mask(problem));
    if (masked.every((problem, index) => problem === problems[index])) return error;
    if (error instanceof ProblemList) return new (error.constructor as new (problems: string[]) => ProblemList)(masked);
    return new Error(masked.join('\n'));
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
