import { describe, expect, it } from 'vitest';
import { RenderRecordMemory, type RenderRecord } from './render-cache.ts';

function record(key: string): RenderRecord {
  return { key, savedAt: Date.now(), server: 'https://127.0.0.1:6443', facts: 'f', reads: [] } as unknown as RenderRecord;
}

describe('RenderRecordMemory', () => {
  it('keeps at most its maximum, dropping the least recently used first', async () => {
    const memory = new RenderRecordMemory(2);
    await memory.save(record('a'));
    await memory.save(record('b'));
    expect(await memory.load('a')).toMatchObject({ key: 'a' });
    await memory.save(record('c'));
    expect(await memory.load('b')).toBeUndefined();
    expect(await memory.load('a')).toMatchObject({ key: 'a' });
    expect(await memory.load('c')).toMatchObject({ key: 'c' });
  });

  it('hands out copies: a caller changing what it loaded leaves the record as saved', async () => {
    const memory = new RenderRecordMemory(1);
    await memory.save(record('a'));
    const loaded = (await memory.load('a')) as RenderRecord;
    loaded.server = 'changed';
    expect(await memory.load('a')).toMatchObject({ server: 'https://127.0.0.1:6443' });
  });
});
