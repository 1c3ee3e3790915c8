import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue, type HandlerResult } from './work-queue.ts';

/** A handler whose calls stay open until the test finishes them, recording when each started. */
function controlledHandler() {
  const calls: Array<{ key: string; at: number; finish: (result?: HandlerResult) => void; fail: (error: Error) => void }> = [];
  const handler = (key: string) =>
    new Promise<HandlerResult | undefined>((resolve, reject) => {
      calls.push({ key, at: Date.now(), finish: resolve, fail: reject });
    });
  return { calls, handler, keys: () => calls.map((call) => call.key) };
}

/** Lets resolved handler promises run their continuations without moving time. */
const settle = () => vi.advanceTimersByTimeAsync(0);

describe('WorkQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('handles a key added several times while waiting only once', async () => {
    const { calls, handler, keys } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 1 });
    queue.add('ns/busy');
    queue.start();
    queue.add('ns/a');
    queue.add('ns/a');
    queue.addAfter('ns/a', 5000);
    expect(queue.size).toBe(2);
    calls[0]!.finish();
    await settle();
    calls[1]!.finish();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(keys()).toEqual(['ns/busy', 'ns/a']);
    expect(queue.size).toBe(0);
  });

  it('keeps the earliest due time whichever order the requests come in', async () => {
    const { calls, handler } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 1 });
    queue.start();
    queue.addAfter('ns/a', 10_000);
    queue.addAfter('ns/a', 3000);
    queue.addAfter('ns/a', 7000);
    expect(queue.dueAt('ns/a')).toBe(1_003_000);
    await vi.advanceTimersByTimeAsync(2999);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((call) => call.at)).toEqual([1_003_000]);
    calls[0]!.finish();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(1);
  });

  it('requeues after the delay the handler returns, unless an earlier add comes', async () => {
    const { calls, handler } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 1 });
    queue.start();
    queue.add('ns/a');
    calls[0]!.finish({ requeueAfterMs: 60_000 });
    await settle();
    expect(queue.dueAt('ns/a')).toBe(1_060_000);
    await vi.advanceTimersByTimeAsync(20_000);
    queue.addAfter('ns/a', 5000);
    await vi.advanceTimersByTimeAsync(5000);
    expect(calls.map((call) => call.at)).toEqual([1_000_000, 1_025_000]);
    calls[1]!.finish({ requeueAfterMs: 1000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls.map((call) => call.at)).toEqual([1_000_000, 1_025_000, 1_026_000]);
  });

  it('never hands one key to two workers; a re-add while it runs makes it run again afterwards', async () => {
    const { calls, handler, keys } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 4 });
    queue.start();
    queue.add('ns/a');
    await settle();
    queue.add('ns/a');
    queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(keys()).toEqual(['ns/a']);
    expect(queue.activeCount).toBe(1);
    calls[0]!.finish({ requeueAfterMs: 600_000 });
    await settle();
    expect(keys()).toEqual(['ns/a', 'ns/a']);
    expect(calls[1]!.at).toBe(1_010_000);
    calls[1]!.finish();
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(keys()).toHaveLength(2);
  });

  it('lets other keys pass a slow key, up to the number of workers', async () => {
    const { calls, handler, keys } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 2 });
    queue.start();
    queue.add('ns/slow');
    for (const name of ['a', 'b', 'c']) queue.add(`ns/${name}`);
    await settle();
    expect(keys()).toEqual(['ns/slow', 'ns/a']);
    expect(queue.depth).toBe(2);
    calls[1]!.finish();
    await settle();
    calls[2]!.finish();
    await settle();
    expect(keys()).toEqual(['ns/slow', 'ns/a', 'ns/b', 'ns/c']);
    calls[3]!.finish();
    await settle();
    expect(queue.activeCount).toBe(1);
    expect(queue.depth).toBe(0);
  });

  it('handles due keys earliest first', async () => {
    const { calls, handler, keys } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 1 });
    queue.addAfter('ns/late', 2000);
    queue.addAfter('ns/early', 1000);
    queue.add('ns/now');
    await vi.advanceTimersByTimeAsync(5000);
    expect(calls).toHaveLength(0);
    queue.start();
    for (let index = 0; index < 3; index++) {
      await settle();
      calls[index]!.finish();
    }
    expect(keys()).toEqual(['ns/now', 'ns/early', 'ns/late']);
  });

  it('backs off exponentially and boundedly for a handler that throws, and resets on success', async () => {
    const { calls, handler } = controlledHandler();
    const errors: Array<{ key: string; retryInMs: number }> = [];
    const queue = new WorkQueue(handler, {
      workers: 1,
      errorBackoffBaseMs: 1000,
      errorBackoffMaxMs: 4000,
      onError: (key, _error, retryInMs) => errors.push({ key, retryInMs }),
    });
    queue.start();
    queue.add('ns/a');
    for (let attempt = 0; attempt < 4; attempt++) {
      await settle();
      calls[attempt]!.fail(new Error('boom'));
      await settle();
      await vi.advanceTimersByTimeAsync(errors.at(-1)!.retryInMs);
    }
    expect(errors.map((error) => error.retryInMs)).toEqual([1000, 2000, 4000, 4000]);
    expect(calls.map((call) => call.at - 1_000_000)).toEqual([0, 1000, 3000, 7000, 11_000]);
    calls[4]!.finish();
    await settle();
    queue.add('ns/a');
    await settle();
    calls[5]!.fail(new Error('again'));
    await settle();
    expect(errors.at(-1)).toEqual({ key: 'ns/a', retryInMs: 1000 });
  });

  it('retries a failure the handler reported after the backoff, never later than the delay it asked for', async () => {
    const { calls, handler } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 1, errorBackoffBaseMs: 1000, errorBackoffMaxMs: 60_000 });
    queue.start();
    queue.add('ns/a');
    for (const [attempt, delay] of [1000, 2000, 4000, 5000].entries()) {
      await settle();
      calls[attempt]!.finish({ failed: true, requeueAfterMs: 5000 });
      await vi.advanceTimersByTimeAsync(delay);
    }
    // Backoffs 1 s, 2 s, 4 s, then capped at the handler's 5 s.
    expect(calls.map((call) => call.at - 1_000_000)).toEqual([0, 1000, 3000, 7000, 12_000]);
    calls[4]!.finish({ requeueAfterMs: 60_000 });
    await vi.advanceTimersByTimeAsync(60_000);
    calls[5]!.finish({ failed: true, requeueAfterMs: 5000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(7);
    calls[6]!.finish();
    await queue.stop();
  });

  it('stops handing out keys on stop, waits for running handlers and resumes on start', async () => {
    const { calls, handler, keys } = controlledHandler();
    const queue = new WorkQueue(handler, { workers: 2 });
    queue.start();
    queue.add('ns/a');
    await settle();
    let stopped = false;
    const stopping = queue.stop().then(() => (stopped = true));
    queue.add('ns/b');
    await vi.advanceTimersByTimeAsync(1000);
    expect(stopped).toBe(false);
    calls[0]!.finish();
    await stopping;
    expect(keys()).toEqual(['ns/a']);
    queue.start();
    await settle();
    expect(keys()).toEqual(['ns/a', 'ns/b']);
  });

  it('lets the event loop run between reconciles of a key that asks to run again at once', async () => {
    let runs = 0;
    const queue = new WorkQueue(async () => (runs++, { requeueAfterMs: 0 }), { workers: 1 });
    queue.start();
    queue.add('ns/eager');
    let fired = false;
    setTimeout(() => (fired = true), 5);
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toBe(true);
    expect(runs).toBeGreaterThan(1);
    await queue.stop();
  });

  it('refuses a worker count below one', () => {
    expect(() => new WorkQueue(async () => undefined, { workers: 0 })).toThrow(/workers must be a positive integer/);
  });
});
