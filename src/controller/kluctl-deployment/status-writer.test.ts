import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StatusWriter } from './status-writer.ts';

describe('StatusWriter', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A writer whose writes record what the status said when each was sent. */
  function recording(delayMs = 1000) {
    const status = { message: '' };
    const sent: string[] = [];
    const writer = new StatusWriter(
      async () => {
        sent.push(status.message);
        return true;
      },
      { delayMs, startedAt: Date.now() },
    );
    return { status, sent, writer };
  }

  it('writes a fast reconcile once, at the end, without its progress', async () => {
    const { status, sent, writer } = recording();
    for (const message of ['Fetching the source', 'Rendering', 'Performing deploy']) {
      status.message = message;
      writer.soon();
      await vi.advanceTimersByTimeAsync(100);
    }
    status.message = 'done';
    expect(await writer.now()).toBe(true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sent).toEqual(['done']);
  });

  it('shows the newest progress of a slow reconcile, at most once per delay', async () => {
    const { status, sent, writer } = recording();
    status.message = 'Fetching the source';
    writer.soon();
    await vi.advanceTimersByTimeAsync(600);
    status.message = 'Rendering';
    writer.soon();
    await vi.advanceTimersByTimeAsync(400);
    expect(sent).toEqual(['Rendering']);
    status.message = 'Performing deploy';
    writer.soon();
    await vi.advanceTimersByTimeAsync(999);
    expect(sent).toEqual(['Rendering']);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual(['Rendering', 'Performing deploy']);
  });

  it('sends one write at a time, in order, each answering whether it worked', async () => {
    const status = { message: '' };
    const sent: string[] = [];
    let running = 0;
    const outcomes = [true, false];
    const writer = new StatusWriter(
      async () => {
        running++;
        expect(running).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 50));
        sent.push(status.message);
        running--;
        return outcomes.shift() ?? true;
      },
      { delayMs: 1000, startedAt: Date.now() },
    );
    status.message = 'first';
    const first = writer.now();
    status.message = 'second';
    const second = writer.now();
    await vi.advanceTimersByTimeAsync(200);
    expect(await first).toBe(true);
    expect(await second).toBe(false);
    // Each write sends the status as it is when its turn comes.
    expect(sent).toEqual(['second', 'second']);
  });

  it('drops a progress write not sent yet when cancelled', async () => {
    const { status, sent, writer } = recording();
    status.message = 'Rendering';
    writer.soon();
    writer.cancel();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sent).toEqual([]);
  });
});
