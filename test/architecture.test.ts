/**
 * The module map stays layered: the folders of src/ (each file directly in src/ counting as a folder of its own)
 * depend on each other without cycles, so each can be understood, tested and reused from below. The imports are
 * read by dpdm (type-only imports included: a cycle of types is a cycle of concepts); tests and their support files
 * do not count.
 */
import path from 'node:path';
import { parseDependencyTree } from 'dpdm';
import { expect, it } from 'vitest';
import { REPO_ROOT } from './support/fixtures.ts';

const SRC = path.join(REPO_ROOT, 'src');

function isProduction(file: string): boolean {
  return file.startsWith(`${SRC}/`) && file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('test-support.ts');
}

/** `src/deploy/apply.ts` → `deploy`; `src/engine.ts` → `engine.ts`. */
function unitOf(file: string): string {
  return path.relative(SRC, file).split(path.sep)[0] as string;
}

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

it('has no dependency cycle between the folders of src/', { timeout: 120_000 }, async () => {
  const tree = await parseDependencyTree(path.join(SRC, '**/*.ts'), { context: REPO_ROOT, transform: false, skipDynamicImports: false });
  const edges = new Map<string, Set<string>>();
  let imports = 0;
  for (const [file, dependencies] of Object.entries(tree)) {
    const from = path.resolve(REPO_ROOT, file);
    if (!isProduction(from)) continue;
    for (const dependency of dependencies ?? []) {
      if (!dependency.id) continue;
      const to = path.resolve(REPO_ROOT, dependency.id);
      if (!isProduction(to) || unitOf(to) === unitOf(from)) continue;
      imports++;
      edges.set(unitOf(from), (edges.get(unitOf(from)) ?? new Set()).add(unitOf(to)));
    }
  }
  expect(imports).toBeGreaterThan(100);
  const left = unordered(edges);
  const onCycles = left.map((unit) => `${unit} → ${[...(edges.get(unit) ?? [])].filter((target) => left.includes(target)).join(', ')}`);
  expect(onCycles).toEqual([]);
});
