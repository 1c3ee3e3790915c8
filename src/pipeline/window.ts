/**
 * WINDOW gates: open only inside one of the gate's windows and outside all of its blackouts. Each window and blackout
 * starts at the times of a cron expression (five fields, or six with seconds, in the gate's time zone; croner parses
 * and steps them) and lasts its duration (Go syntax: `8h`, `30m`). Plural's WINDOW gate is a name with no evaluator;
 * this is the evaluator, pure over the instant it is given so that callers inject the clock.
 */
import { Cron } from 'croner';
import { parseDuration } from '../duration.ts';

/** A span of time repeating at a cron expression's times. */
export interface Recurrence {
  cron: string;
  duration: string;
}

export interface WindowSpec {
  /** IANA time zone of the cron expressions, e.g. Europe/Berlin; default UTC. */
  timeZone?: string;
  windows: Recurrence[];
  blackouts?: Recurrence[];
}

export interface WindowState {
  open: boolean;
  /** When the state can next change: a window or blackout starting or ending; undefined when nothing recurs. */
  changesAt: Date | undefined;
  /** Why, for people: the window it is in, or when it next opens. */
  reason: string;
}

/** A problem with the spec, by its path relative to the gate's `window` field. */
export interface WindowProblem {
  field: string;
  message: string;
}

/** Checks every cron expression, duration and the time zone; the first problem, or undefined. */
export function windowProblem(spec: WindowSpec): WindowProblem | undefined {
  const timeZone = spec.timeZone ?? 'UTC';
  if (!isTimeZone(timeZone)) return { field: 'timeZone', message: `unknown time zone ${JSON.stringify(timeZone)}` };
  if (spec.windows.length === 0) return { field: 'windows', message: 'a WINDOW gate needs at least one window' };
  for (const list of ['windows', 'blackouts'] as const) {
    for (const [index, entry] of (spec[list] ?? []).entries()) {
      try {
        schedule(entry.cron, timeZone);
      } catch (error) {
        return { field: `${list}[${index}].cron`, message: `${JSON.stringify(entry.cron)}: ${(error as Error).message}` };
      }
      try {
        if (parseDuration(entry.duration) <= 0) throw new Error('a window lasts longer than 0');
      } catch (error) {
        return { field: `${list}[${index}].duration`, message: (error as Error).message };
      }
    }
  }
  return undefined;
}

/** Whether the gate is open at `now`, and when that can next change. The spec must have passed windowProblem. */
export function windowState(spec: WindowSpec, now: Date): WindowState {
  const timeZone = spec.timeZone ?? 'UTC';
  const windows = spec.windows.map((entry) => span(entry, timeZone, now));
  const blackouts = (spec.blackouts ?? []).map((entry) => span(entry, timeZone, now));
  const changes = [...windows, ...blackouts].map((s) => s.changesAt).filter((date): date is Date => date !== undefined);
  const changesAt = changes.length > 0 ? new Date(Math.min(...changes.map((date) => date.getTime()))) : undefined;
  const inBlackout = blackouts.find((s) => s.inside);
  const inWindow = windows.find((s) => s.inside);
  if (inBlackout)
    return { open: false, changesAt, reason: `in the blackout ${describe(inBlackout.entry, timeZone)} until ${iso(inBlackout.changesAt)}` };
  if (inWindow)
    return { open: true, changesAt, reason: `in the window ${describe(inWindow.entry, timeZone)} until ${iso(inWindow.changesAt)}` };
  const opens = windows.map((s) => s.changesAt).filter((date): date is Date => date !== undefined);
  const next = opens.length > 0 ? new Date(Math.min(...opens.map((date) => date.getTime()))) : undefined;
  return { open: false, changesAt, reason: `outside every window; the next opens at ${iso(next)}` };
}

interface Span {
  entry: Recurrence;
  inside: boolean;
  /** Its end when inside, else its next start. */
  changesAt: Date | undefined;
}

function span(entry: Recurrence, timeZone: string, now: Date): Span {
  const cron = schedule(entry.cron, timeZone);
  const length = parseDuration(entry.duration);
  // The latest start at or before now: previousRuns looks strictly before its reference, to the second.
  const start = cron.previousRuns(2, new Date(now.getTime() + 1000)).find((run) => run.getTime() <= now.getTime());
  if (start && now.getTime() < start.getTime() + length) return { entry, inside: true, changesAt: new Date(start.getTime() + length) };
  return { entry, inside: false, changesAt: cron.nextRun(now) ?? undefined };
}

function schedule(pattern: string, timeZone: string): Cron {
  return new Cron(pattern, { timezone: timeZone, paused: true });
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function describe(entry: Recurrence, timeZone: string): string {
  return `'${entry.cron}' for ${entry.duration} (${timeZone})`;
}

function iso(date: Date | undefined): string {
  return date ? date.toISOString() : 'never';
}
