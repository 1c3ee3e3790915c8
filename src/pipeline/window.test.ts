/**
 * WINDOW gates over injected instants: inside and outside a weekday window in a time zone, a blackout over a window,
 * the next change, and bad specs named by field.
 */
import { describe, expect, test } from 'vitest';
import { windowProblem, type WindowSpec, windowState } from './window.ts';

/** Weekdays 09:00–17:00 Berlin time; a blackout over the Christmas days. */
const office: WindowSpec = {
  timeZone: 'Europe/Berlin',
  windows: [{ cron: '0 9 * * 1-5', duration: '8h' }],
  blackouts: [{ cron: '0 0 24 12 *', duration: '72h' }],
};

describe('windowState', () => {
  test('open inside the window, in its time zone, until it ends', () => {
    // Wednesday 25 November 2026, 10:00 in Berlin (UTC+1).
    const state = windowState(office, new Date('2026-11-25T09:00:00Z'));
    expect(state).toMatchObject({ open: true, changesAt: new Date('2026-11-25T16:00:00Z') });
    expect(state.reason).toBe("in the window '0 9 * * 1-5' for 8h (Europe/Berlin) until 2026-11-25T16:00:00.000Z");
  });

  test('closed before the window opens and at the weekend, until the next weekday morning', () => {
    expect(windowState(office, new Date('2026-11-25T07:59:00Z'))).toMatchObject({
      open: false,
      changesAt: new Date('2026-11-25T08:00:00Z'),
    });
    const saturday = windowState(office, new Date('2026-11-28T12:00:00Z'));
    expect(saturday).toMatchObject({ open: false, changesAt: new Date('2026-11-30T08:00:00Z') });
    expect(saturday.reason).toBe('outside every window; the next opens at 2026-11-30T08:00:00.000Z');
  });

  test('the window opens on its first instant and closes on its last', () => {
    expect(windowState(office, new Date('2026-11-25T08:00:00Z')).open).toBe(true);
    expect(windowState(office, new Date('2026-11-25T16:00:00Z')).open).toBe(false);
  });

  test('a blackout closes a window, until the blackout ends', () => {
    // Thursday 24 December 2026, 10:00 in Berlin: a weekday window, but inside the blackout.
    const state = windowState(office, new Date('2026-12-24T09:00:00Z'));
    expect(state.open).toBe(false);
    expect(state.reason).toBe("in the blackout '0 0 24 12 *' for 72h (Europe/Berlin) until 2026-12-26T23:00:00.000Z");
  });
});

describe('windowProblem', () => {
  test.each([
    [{ ...office, timeZone: 'Mars/Olympus' }, 'timeZone', 'unknown time zone "Mars/Olympus"'],
    [{ windows: [] }, 'windows', 'a WINDOW gate needs at least one window'],
    [{ windows: [{ cron: '0 25 * * *', duration: '1h' }] }, 'windows[0].cron', undefined],
    [{ windows: [{ cron: '0 9 * * *', duration: '1d' }] }, 'windows[0].duration', undefined],
    [
      { windows: [{ cron: '0 9 * * *', duration: '1h' }], blackouts: [{ cron: '0 9 * *', duration: '1h' }] },
      'blackouts[0].cron',
      undefined,
    ],
  ])('names the field of a bad spec: %j', (spec, field, message) => {
    const problem = windowProblem(spec as WindowSpec);
    expect(problem?.field).toBe(field);
    if (message) expect(problem?.message).toBe(message);
  });

  test('passes a good spec', () => {
    expect(windowProblem(office)).toBeUndefined();
  });
});
