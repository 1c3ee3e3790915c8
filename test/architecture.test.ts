/**
 * The module map stays layered, as docs/README.md draws it: shared floors (engine, kube, api, store, …) below the
 * roles that run them (cli, controller, server, agent, operator, webui, up).
 * - The folders of src/ (each file directly in src/ counting as a folder of its own) depend on each other without
 *   cycles, so each can be understood, tested and reused from below.
 * - Roles are leaves: no folder imports a role, except the CLI, the shell that starts every role, and it only
 *   through the role's public entry point (`src/<role>/index.ts`). Whatever two roles share lives on a floor.
 * - No file imports itself back through others, either.
 * The imports are read by dpdm (type-only imports included: a cycle of types is a cycle of concepts); tests and their
 * support files do not count.
 */
import path from 'node:path';
import { parseCircular, parseDependencyTree, type DependencyTree } from 'dpdm';
import { beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from './support/fixtures.ts';

const SRC = path.join(REPO_ROOT, 'src');
const ROLES = ['cli', 'controller', 'server', 'agent', 'operator', 'webui', 'up'];
/** The one folder that starts roles: `gantry server`, `gantry agent run`, … */
const SHELL = 'cli';

function isProduction(file: string): boolean {
  return file.startsWith(`${SRC}/`) && file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('test-support.ts');
}

/** `src/deploy/apply.ts` → `deploy`; `src/engine.ts` → `engine.ts`. */
function unitOf(file: string): string {
  return path.relative(SRC, file).split(path.sep)[0] as string;
}

/** An import from one production file to another, as absolute paths. */
interface Import {
  from: string;
  to: string;
}

let tree: DependencyTree;
let imports: Import[];

beforeAll(async () => {
  tree = await parseDependencyTree(path.join(SRC, '**/*.ts'), { context: REPO_ROOT, transform: false, skipDynamicImports: false });
  imports = Object.entries(tree).flatMap(([file, dependencies]) => {
    const from = path.resolve(REPO_ROOT, file);
    if (!isProduction(from)) return [];
    return (dependencies ?? [])
      .filter((dependency) => dependency.id !== null)
      .map((dependency) => ({ from, to: path.resolve(REPO_ROOT, dependency.id as string) }))
      .filter(({ to }) => isProduction(to));
  });
}, 120_000);

/**
 * The units that cannot be put in dependency order (Kahn's algorithm): those on a cycle, and those depending on one.
 * Empty when the graph has no cycle.
 */
function unordered(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const remaining = new Map([...edges].map(([unit, targets]) => [unit, new Set(targets)]));
  for (let removed = true; removed;) {
    removed = false;
    for (const [unit, targets] of remaining) {
      if ([...targets].some((target) => remaining.has(target))) continue;
      remaining.delete(unit);
      removed = true;
    }
  }
  return [...remaining.keys()].sort();
}

it('has no dependency cycle between the folders of src/', () => {
  const edges = new Map<string, Set<string>>();
  const between = imports.filter(({ from, to }) => unitOf(from) !== unitOf(to));
  for (const { from, to } of between) edges.set(unitOf(from), (edges.get(unitOf(from)) ?? new Set()).add(unitOf(to)));
  expect(between.length).toBeGreaterThan(100);
  const left = unordered(edges);
  const onCycles = left.map((unit) => `${unit} → ${[...(edges.get(unit) ?? [])].filter((target) => left.includes(target)).join(', ')}`);
  expect(onCycles).toEqual([]);
});

it('keeps roles as leaves: only the CLI imports a role, and only its index.ts', () => {
  const leaning = imports
    .filter(({ from, to }) => unitOf(from) !== unitOf(to) && ROLES.includes(unitOf(to)))
    .filter(({ from, to }) => !(unitOf(from) === SHELL && path.relative(SRC, to) === `${unitOf(to)}/index.ts`))
    .map(({ from, to }) => `${path.relative(SRC, from)} → ${path.relative(SRC, to)}`);
  expect(leaning).toEqual([]);
});

it('has no import cycle between files, types included', () => {
  const production = Object.fromEntries(Object.entries(tree).filter(([file]) => isProduction(path.resolve(REPO_ROOT, file))));
  const cycles = parseCircular(production).map((cycle) => cycle.map((file) => path.relative('src', file)).join(' → '));
  expect(cycles).toEqual([]);
});
