/**
 * The outcome of a command, in the sections Kluctl reports: new, changed (with a diff each), deleted and orphan
 * objects, warnings and errors. Commands add to a ResultCollector as they go (from parallel items) and print the
 * frozen CommandResult at the end.
 */
import { formatRef, refKey, type ObjectRef } from '../kube/object.ts';
import { messageOf } from '../problems.ts';

/** A changed object: its ref plus the unified diff of the normalized objects (YAML), cluster → rendered. */
export type ChangedObject = ObjectRef & { diff: string };

/** A warning or error, naming the object when it concerns one. */
export interface ResultMessage {
  object?: ObjectRef;
  message: string;
}

export interface CommandResult {
  newObjects: ObjectRef[];
  changedObjects: ChangedObject[];
  deletedObjects: ObjectRef[];
  orphanObjects: ObjectRef[];
  /** Hook objects applied during the run (Kluctl's "Applied hooks"). */
  appliedHooks: ObjectRef[];
  warnings: ResultMessage[];
  errors: ResultMessage[];
}

/** A result with nothing in it: a new one each call, since collectors fill theirs in place. */
export function emptyResult(): CommandResult {
  return { newObjects: [], changedObjects: [], deletedObjects: [], orphanObjects: [], appliedHooks: [], warnings: [], errors: [] };
}

/**
 * A command's result while it runs: the add* methods, `warn` and `error` append and may be called from parallel
 * items, and `finish` returns a copy whose object lists are de-duplicated by ref and sorted as Kluctl sorts them
 * (changed objects and messages keep every entry; messages keep their order). Use collectResult to run a command.
 */
export class ResultCollector {
  private readonly result = emptyResult();

  addNew(ref: ObjectRef): void {
    this.result.newObjects.push(ref);
  }

  addChanged(ref: ObjectRef, diff: string): void {
    this.result.changedObjects.push({ ...ref, diff });
  }

  addDeleted(ref: ObjectRef): void {
    this.result.deletedObjects.push(ref);
  }

  addAppliedHook(ref: ObjectRef): void {
    this.result.appliedHooks.push(ref);
  }

  addOrphan(ref: ObjectRef): void {
    this.result.orphanObjects.push(ref);
  }

  warn(message: string, ref?: ObjectRef): void {
    this.result.warnings.push(ref ? { object: ref, message } : { message });
  }

  error(message: string, ref?: ObjectRef): void {
    this.result.errors.push(ref ? { object: ref, message } : { message });
  }

  /**
   * The result with every object list sorted as Kluctl sorts refs: by their printed form, in byte order (Go's `<` on
   * strings), not by locale, whose collation also costs a command ~10 ms to load.
   */
  finish(): CommandResult {
    const byRef = (a: ObjectRef, b: ObjectRef): number => {
      const [x, y] = [formatRef(a), formatRef(b)];
      return x < y ? -1 : x > y ? 1 : 0;
    };
    const unique = (refs: ObjectRef[]): ObjectRef[] => [...new Map(refs.map((ref) => [refKey(ref), ref])).values()].sort(byRef);
    return {
      newObjects: unique(this.result.newObjects),
      changedObjects: [...this.result.changedObjects].sort(byRef),
      deletedObjects: unique(this.result.deletedObjects),
      orphanObjects: unique(this.result.orphanObjects),
      appliedHooks: unique(this.result.appliedHooks),
      warnings: [...this.result.warnings],
      errors: [...this.result.errors],
    };
  }
}

/**
 * A command its signal stopped (an interruption, a lost target lock) after it had begun changing the cluster. Its
 * message is the cause's (the signal's reason).
 */
export class PartialResultError extends Error {
  /** What the command had done by then, masked as its result would have been. */
  readonly partial: CommandResult;

  constructor(cause: unknown, partial: CommandResult) {
    super(messageOf(cause), { cause });
    this.name = 'PartialResultError';
    this.partial = partial;
  }
}

/**
 * Runs `work`, which adds to `result`, and returns `result` finished and masked: the one way a command's partial
 * result gets out when its signal stops it.
 * @throws PartialResultError holding what `result` holds when `signal` fired (whatever `work` threw then: an
 *   abandoned request's error or the reason itself); else whatever `work` throws.
 */
export async function collectResult(
  result: ResultCollector,
  masker: { mask(text: string): string },
  signal: AbortSignal | undefined,
  work: () => Promise<void>,
): Promise<CommandResult> {
  try {
    await work();
  } catch (error) {
    if (signal?.aborted) throw new PartialResultError(signal.reason, maskResult(result.finish(), masker));
    throw error;
  }
  return maskResult(result.finish(), masker);
}

/** `result` with every diff and message masked (the values of sensitive vars, see src/project/sensitive.ts). */
export function maskResult(result: CommandResult, masker: { mask(text: string): string }): CommandResult {
  const message = (entry: ResultMessage): ResultMessage => ({ ...entry, message: masker.mask(entry.message) });
  return {
    ...result,
    changedObjects: result.changedObjects.map((changed) => ({ ...changed, diff: masker.mask(changed.diff) })),
    warnings: result.warnings.map(message),
    errors: result.errors.map(message),
  };
}
