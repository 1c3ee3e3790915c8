/**
 * The render half of `npm run bench` (`--only render`): `gantry render --offline-kubernetes` of generated Kluctl
 * projects of 1,000, 5,000 and 20,000 templated ConfigMaps (items of 10, each ConfigMap templated from args and
 * item vars), its wall time and peak RSS (the Node process and its Jinja2 workers, sampled every 50 ms), against
 * two baselines measured in the same run:
 * - the same templates rendered by Jinja2 alone: one Python process loading and rendering every file with one
 *   Environment, no YAML parsing and no Kluctl semantics — the floor a Jinja2 engine cannot go under;
 * - the goal for 1,000 objects (1 s), and, for the larger sizes, linear growth from the 1,000 figure.
 * Each figure is the median of `runs` renders after a first one (reported as well): the CLI keeps compiled template
 * code across processes (docs/engine.md), so the first render of a project compiles every file and the next ones
 * only those that changed, as a user's repeated `gantry diff`.
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, start } from '../src/exec.ts';
import type { BenchRow, ControllerBenchResult } from './bench-controller.ts';
import { median, RssSampler } from './bench/measure.ts';

const SIZES = [1000, 5000, 20_000];
const PER_ITEM = 10;
const GOAL_1000_S = 1;

export interface RenderBenchOptions {
  runs: number;
  repoRoot: string;
  env: Record<string, string>;
  report: (line: string) => void;
}

/** Renders each generated project `runs` times and returns the report rows. */
export async function benchRender(options: RenderBenchOptions): Promise<ControllerBenchResult> {
  const rows: BenchRow[] = [];
  // Renders are CPU-bound on 2 cores: whatever else runs (a local cluster's API servers) shows in every figure.
  const notes = [`load average (1 min) before the first render: ${os.loadavg()[0]?.toFixed(2)}`];
  let perObjectAt1000 = 0;
  for (const size of SIZES) {
    const dir = await mkdtemp(path.join(os.tmpdir(), `gantry-bench-render-${size}-`));
    try {
      await writeGeneratedProject(dir, size);
      const gantry: number[] = [];
      const rss: number[] = [];
      const jinja: number[] = [];
      // A new folder: nothing of it is compiled yet. The runs after it are a user's next renders of the project.
      options.report(`render: ${size} objects, first render`);
      const first = await timedRender(dir, options);
      for (let index = 0; index < options.runs; index++) {
        options.report(`render: ${size} objects, run ${index + 1} of ${options.runs}`);
        const measured = await timedRender(dir, options);
        gantry.push(measured.seconds);
        rss.push(measured.peakMiB);
        jinja.push(await timedJinjaAlone(dir, size, options));
      }
      if (size === SIZES[0]) perObjectAt1000 = median(gantry) / size;
      rows.push({
        measurement: `render ${size} objects`,
        value: median(gantry),
        baseline: size === SIZES[0] ? GOAL_1000_S : perObjectAt1000 * size,
        unit: 's',
        baselineIs: size === SIZES[0] ? 'the goal' : 'linear from 1000',
      });
      rows.push({
        measurement: `first render ${size} objects`,
        value: first.seconds,
        baseline: median(gantry),
        unit: 's',
        baselineIs: 'a later render',
      });
      rows.push({
        measurement: `render ${size} objects vs Jinja2 alone`,
        value: median(gantry),
        baseline: median(jinja),
        unit: 's',
        baselineIs: 'Jinja2 alone',
      });
      rows.push({
        measurement: `render ${size} objects, peak RSS (tree)`,
        value: median(rss),
        baseline: 300,
        unit: 'MiB',
        baselineIs: 'the goal (1000)',
      });
      notes.push(`${size} objects: ${((median(gantry) / size) * 1e6).toFixed(0)} µs an object`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return { title: 'render: generated projects of templated ConfigMaps, `gantry render --offline-kubernetes`', rows, notes };
}

/** A one-target project of `size / 10` items of 10 ConfigMaps each, every value templated. */
async function writeGeneratedProject(dir: string, size: number): Promise<void> {
  const items = Math.ceil(size / PER_ITEM);
  await writeFile(
    path.join(dir, '.kluctl.yaml'),
    'discriminator: bench-render\ntargets:\n  - name: bench\n    args:\n      environment: bench\n',
  );
  const deployment = [
    'deployments:',
    ...Array.from({ length: items }, (_, item) => `  - path: item-${item}\n    vars:\n      - values:\n          item: ${item}`),
  ];
  await writeFile(path.join(dir, 'deployment.yaml'), `${deployment.join('\n')}\n`);
  for (let item = 0; item < items; item++) {
    const folder = path.join(dir, `item-${item}`);
    await mkdir(folder);
    for (let index = 0; index < PER_ITEM; index++) {
      await writeFile(
        path.join(folder, `cm-${index}.yaml`),
        [
          'apiVersion: v1',
          'kind: ConfigMap',
          'metadata:',
          `  name: cm-{{ item }}-${index}`,
          '  namespace: bench-{{ args.environment }}',
          '  labels:',
          '    app: item-{{ item }}',
          'data:',
          '  environment: "{{ args.environment | upper }}"',
          `  index: "{{ ${index} * 2 }}"`,
          '  list: "{% for n in range(3) %}{{ n }},{% endfor %}"',
          '',
        ].join('\n'),
      );
    }
  }
}

async function timedRender(dir: string, options: RenderBenchOptions): Promise<{ seconds: number; peakMiB: number }> {
  const started = performance.now();
  const child = start(
    path.join(options.repoRoot, 'node_modules/.bin/node'),
    [path.join(options.repoRoot, 'bin/gantry.js'), 'render', '--offline-kubernetes', '-t', 'bench', '--project-dir', dir],
    { env: options.env },
  );
  const sampler = new RssSampler(child.pid!, 50);
  child.stdout?.resume();
  child.stderr?.resume();
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  const peak = sampler.stop();
  if (code !== 0) throw new Error(`gantry render of ${dir} exited with ${code}`);
  return { seconds, peakMiB: peak.treeRss / (1024 * 1024) };
}

/** Jinja2 alone: one Python process renders every item's files with one Environment, as the floor. */
async function timedJinjaAlone(dir: string, size: number, options: RenderBenchOptions): Promise<number> {
  const script = [
    'import glob, os, sys, jinja2',
    'root = sys.argv[1]',
    'env = jinja2.Environment(loader=jinja2.FileSystemLoader(root))',
    'for folder in sorted(glob.glob(os.path.join(root, "item-*"))):',
    '    item = int(folder.rsplit("-", 1)[1])',
    '    for name in sorted(os.listdir(folder)):',
    '        env.get_template(os.path.relpath(os.path.join(folder, name), root)).render(item=item, args={"environment": "bench"})',
  ].join('\n');
  const started = performance.now();
  await run('python3', ['-c', script, dir], { env: options.env });
  const seconds = (performance.now() - started) / 1000;
  options.report(`render: Jinja2 alone, ${size} objects, ${seconds.toFixed(2)} s`);
  return seconds;
}
