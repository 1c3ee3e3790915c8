/**
 * Measuring processes from outside, for the bench halves: RSS (VmRSS of /proc/<pid>/status) and CPU seconds
 * (/proc/<pid>/stat) of a process and its descendants, and the statistics the reports use.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { sleep } from '../../src/sleep.ts';

export interface Memory {
  /** VmRSS of the process, bytes. */
  rss: number;
  /** VmRSS of the process and all its descendants, bytes. */
  treeRss: number;
}

/** Samples the RSS of `pid` every `everyMs` and keeps the peaks. */
export class RssSampler {
  current: Memory;
  private peak: Memory;
  private readonly timer: NodeJS.Timeout;

  constructor(pid: number, everyMs: number) {
    this.current = memoryOf(pid);
    this.peak = { ...this.current };
    this.timer = setInterval(() => {
      this.current = memoryOf(pid);
      this.peak = { rss: Math.max(this.peak.rss, this.current.rss), treeRss: Math.max(this.peak.treeRss, this.current.treeRss) };
    }, everyMs);
  }

  stop(): Memory {
    clearInterval(this.timer);
    return this.peak;
  }
}

/** The median of samples taken every 250 ms for `ms`. */
export async function sampleFor(pid: number, ms: number): Promise<Memory> {
  const samples: Memory[] = [];
  for (const end = Date.now() + ms; Date.now() < end;) {
    samples.push(memoryOf(pid));
    await sleep(250);
  }
  return { rss: median(samples.map((sample) => sample.rss)), treeRss: median(samples.map((sample) => sample.treeRss)) };
}

export function memoryOf(pid: number): Memory {
  const tree = processTree(pid);
  const rss = (one: number) => {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readProc(`${one}/status`));
    return match ? Number(match[1]) * 1024 : 0;
  };
  return { rss: rss(pid), treeRss: tree.reduce((sum, one) => sum + rss(one), 0) };
}

/**
 * CPU seconds (user + system) of `pid`, its live descendants, and its reaped children (git processes that ran
 * meanwhile). Jinja2 workers that exited after a sample would move their time into cutime, so the sum never drops.
 */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const one of processTree(pid)) {
    const fields = statFields(one);
    if (!fields) continue;
    // utime, stime (fields 14, 15) and, for the controller itself, cutime, cstime (16, 17); 1-based, comm is field 2.
    ticks += Number(fields[11]) + Number(fields[12]);
    if (one === pid) ticks += Number(fields[13]) + Number(fields[14]);
  }
  return ticks / 100;
}

/** `pid` and every descendant, from /proc/<pid>/stat. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readProcDir()) {
    const fields = statFields(entry);
    if (!fields) continue;
    const parent = Number(fields[1]);
    children.set(parent, [...(children.get(parent) ?? []), entry]);
  }
  const tree = [pid];
  for (let index = 0; index < tree.length; index++) tree.push(...(children.get(tree[index]!) ?? []));
  return tree;
}

/** The fields of /proc/<pid>/stat after `comm` (field 3, state, is index 0). */
function statFields(pid: number): string[] | undefined {
  const stat = readProc(`${pid}/stat`);
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.slice(close + 2).split(' ');
}

/** A /proc file, or '' when the process is gone. */
function readProc(relative: string): string {
  try {
    return readFileSync(`/proc/${relative}`, 'utf8');
  } catch {
    return '';
  }
}

function readProcDir(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The `p`-th percentile (0..100) of `values`, nearest rank. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}
