/**
 * The agent's source cache on hostile tarballs, built entry by entry with node-tar's Header: links and paths leaving
 * the source, devices and FIFOs, and the three caps are each refused with the entry (or cap) named and nothing left
 * in the cache; a sound tarball with links inside unpacks and its links work.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header, type types } from 'tar';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { SourceCache, type TarballLimits } from './source-cache.ts';

interface Entry {
  path: string;
  type?: types.EntryTypeName;
  linkpath?: string;
  body?: string | Buffer;
}

/** A gzipped tar stream of `entries` exactly as given (no path sanitising, unlike packing from disk). */
function tarball(entries: Entry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? '');
    const type = entry.type ?? 'File';
    const header = new Header({
      path: entry.path,
      type,
      linkpath: entry.linkpath,
      size: body.length,
      mode: type === 'Directory' ? 0o755 : 0o644,
      mtime: new Date(0),
    });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('SourceCache.add', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-source-cache-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const add = (entries: Entry[], limits: Partial<TarballLimits> = {}) => {
    const bytes = tarball(entries);
    return new SourceCache(path.join(dir, 'sources'), limits).add(sha256(bytes), bytes);
  };

  test('unpacks a sound tarball whose symlinks and hard links stay inside, and they work', async () => {
    const unpacked = await add([
      { path: 'app/', type: 'Directory' },
      { path: 'app/cm.yaml', body: 'a: 1\n' },
      { path: 'app/same.yaml', type: 'SymbolicLink', linkpath: 'cm.yaml' },
      { path: 'app/sub/', type: 'Directory' },
      { path: 'app/sub/up.yaml', type: 'SymbolicLink', linkpath: '../cm.yaml' },
      { path: 'values', type: 'SymbolicLink', linkpath: 'app' },
      { path: 'hard.yaml', type: 'Link', linkpath: 'app/cm.yaml' },
    ]);
    expect(unpacked).toBe(path.join(dir, 'sources', path.basename(unpacked)));
    for (const file of ['app/same.yaml', 'app/sub/up.yaml', 'values/cm.yaml', 'hard.yaml']) {
      expect(await readFile(path.join(unpacked, file), 'utf8')).toBe('a: 1\n');
    }
    expect(await readlink(path.join(unpacked, 'app/sub/up.yaml'))).toBe('../cm.yaml');
    expect(await readdir(path.join(dir, 'sources'))).toEqual([path.basename(unpacked)]);
  });

  const file = { path: 'cm.yaml', body: 'a: 1\n' };
  test.each<[string, Entry[], RegExp]>([
    [
      'a symlink to an absolute path',
      [{ path: 'leak', type: 'SymbolicLink', linkpath: '/etc/passwd' }],
      /entry 'leak': a link to the absolute path '\/etc\/passwd'/,
    ],
    [
      'a symlink climbing out',
      [{ path: 'a/leak', type: 'SymbolicLink', linkpath: '../../x' }],
      /entry 'a\/leak': a link to '..\/..\/x', outside the source/,
    ],
    [
      'a hard link to an absolute path',
      [{ path: 'h', type: 'Link', linkpath: '/etc/passwd' }],
      /entry 'h': a link to the absolute path '\/etc\/passwd'/,
    ],
    ['a hard link climbing out', [{ path: 'h', type: 'Link', linkpath: '../x' }], /entry 'h': a link to '..\/x', outside the source/],
    [
      'a symlink leaving through another link',
      [
        { path: 'a/up', type: 'SymbolicLink', linkpath: '..' },
        { path: 'b', type: 'SymbolicLink', linkpath: 'a/up/../source.tar.gz' },
      ],
      /the symlink 'b' -> 'a\/up\/..\/source.tar.gz' leads outside the source/,
    ],
    [
      'a symlink to a sibling folder through another link',
      [
        { path: 'a/up', type: 'SymbolicLink', linkpath: '..' },
        { path: 'b', type: 'SymbolicLink', linkpath: 'a/up/../other' },
      ],
      /the symlink 'b' -> 'a\/up\/..\/other' leads to nothing inside the source/,
    ],
    ['an absolute path', [{ path: '/tmp/gantry-abs.yaml', body: 'x' }], /entry '\/tmp\/gantry-abs.yaml': an absolute path/],
    ['a path with ..', [{ path: 'a/../../x.yaml', body: 'x' }], /entry 'a\/..\/..\/x.yaml': a path with a '..' component/],
    ['a character device', [{ path: 'null', type: 'CharacterDevice' }], /entry 'null': a CharacterDevice entry/],
    ['a FIFO', [{ path: 'pipe', type: 'FIFO' }], /entry 'pipe': a FIFO entry/],
  ])('refuses %s, naming the entry, and keeps nothing', async (_name, entries, message) => {
    await expect(add([file, ...entries])).rejects.toThrow(message);
    expect(await readdir(path.join(dir, 'sources'))).toEqual([]);
  });

  test('refuses a tarball over each cap, and keeps nothing', async () => {
    await expect(add([file], { maxTarballBytes: 20 })).rejects.toThrow(/tarball is \d+ bytes, more than the 20 an agent accepts/);
    await expect(add([file, { path: 'b', body: 'b' }, { path: 'c', body: 'c' }], { maxEntries: 2 })).rejects.toThrow(
      "tarball entry 'c': the tarball holds more than the 2 entries an agent accepts",
    );
    // 64 MiB of zeros gzip to about 64 KiB: an expansion of 1000 times, under node-tar's own ratio cap.
    const bomb = { path: 'zeros', body: Buffer.alloc(64 * 1024 * 1024) };
    await expect(add([bomb], { maxUnpackedBytes: 8 * 1024 * 1024 })).rejects.toThrow(
      'tarball unpacks to more than the 8388608 bytes an agent accepts',
    );
    expect(await readdir(path.join(dir, 'sources'))).toEqual([]);
  });
});
