/**
 * Generated Kluctl projects for the loader fuzz tests: documents with Kluctl's keys whose values are right, wrongly
 * typed or hostile (paths out of the project, template syntax, `__proto__` names), written as YAML, as YAML with
 * some text spliced in, or as arbitrary text; and the engine's own loading sequence (parseArgs, loadKluctlProject,
 * resolveTarget, loadDeploymentItems) run on them with the real Jinja2.
 */
import fc from 'fast-check';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { isInside } from '../../../src/files.ts';
import { parseArgs } from '../../../src/project/args.ts';
import { loadDeploymentItems } from '../../../src/project/deployment-project.ts';
import { loadKluctlProject, resolveTarget } from '../../../src/project/kluctl-project.ts';
import { ProblemList } from '../../../src/problems.ts';
import type { JinjaPool } from '../../../src/template/jinja-pool.ts';
import { toYaml } from '../../../src/yaml.ts';
import { testProjectEnvironment } from '../../support/engine.ts';
import { isCrash, withinLimit } from './fuzz.ts';

/** Strings that have broken loaders elsewhere: traversal, prototype keys, separators, YAML words. */
const HOSTILE = [
  ...['', ' ', '.', '..', '../x', '../../etc', '/etc', '/', 'a', 'b', 'sub', 'sub/', './sub', 'sub/..', 'a/b', 'missing', 'vars.yaml'],
  ...['__proto__', '__proto__.polluted', 'constructor', 'constructor.prototype.polluted', 'prototype', 'toString', 'hasOwnProperty'],
  ...['a..b', '.a', 'a.', 'a.b.c', 'x=y', '-', '*', '?', '#', "'", '"', '\\', '\n', '\t', 'ä', '😀', '\u0000', 'on', 'null', '1e3'],
  ...['true', 'false', 'args.a', 'target.name == "a"', 'args.a is defined', 'missing.key'],
];

/** Template syntax, good and bad (every deployment.yaml is a Jinja2 template, so these are rarer there). */
const TEMPLATES = [
  ...['{{', '}}', '{%', '%}', '{#', '{{ target.name }}', '{{ args.a }}', '{{ args.missing }}', '{{ missing.key }}', '{{ 1/0 }}'],
  ...['{{ args | tojson }}', '{% if true %}x{% endif %}', '{% raw %}{{{% endraw %}', '{{ "{{" }}', '{% include "vars.yaml" %}'],
  ...['{% include "../../etc/hostname" %}', "{{ get_var('a.b', 'd') }}", '{% set x = 1 %}{{ x }}', '{{ x'],
];

/** Hostile and random strings without template syntax (beyond what random strings hold by chance). */
export const hostileString = fc.oneof({ arbitrary: fc.constantFrom(...HOSTILE), weight: 4 }, fc.string({ maxLength: 12 }));

/** Hostile strings and template syntax, for values Kluctl renders as templates one by one (targets, vars sources). */
export const templatedString = fc.oneof({ arbitrary: hostileString, weight: 3 }, fc.constantFrom(...TEMPLATES));

/**
 * Documents with Kluctl's keys, their strings drawn from `str`: a .kluctl.yaml, a root and an included
 * deployment.yaml, a `.kluctl-library.yaml` (which makes an included folder a library taking args), and `-a name=value` arguments.
 * With `wrongKinds`, a field rarely holds anything JSON can hold and a record rarely gets an unknown key: a document
 * has dozens of fields, and one wrong field stops the load at validation, so without a valid-only variant beside
 * it hardly any case would get past validation.
 */
export function kluctlDocuments(str: fc.Arbitrary<string>, wrongKinds: boolean) {
  const mostly = <T>(right: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    wrongKinds ? fc.oneof({ arbitrary: right, weight: 30 }, { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 }) : right;
  const unknownKey = wrongKinds
    ? fc.oneof({ arbitrary: fc.constant(undefined), weight: 30 }, fc.tuple(str, fc.jsonValue({ maxDepth: 1 })))
    : fc.constant(undefined);
  const kluctlRecord = (fields: Record<string, fc.Arbitrary<unknown>>, requiredKeys: string[] = []) =>
    fc
      .tuple(fc.record(fields, { requiredKeys }), unknownKey)
      .map(([record, extra]): Record<string, unknown> => (extra ? { ...record, [extra[0]]: extra[1] } : record));

  const argName = fc.oneof(fc.constantFrom('a', 'b', 'a.b', 'x.y.z'), str);
  const smallDict = fc.dictionary(str, fc.oneof(str, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 3 });
  const stringMap = fc.dictionary(str, str, { maxKeys: 3 });
  const stringList = fc.array(str, { maxLength: 3 });
  // A `when` is a Jinja2 expression: mostly valid ones, true and false, so loading goes on past it.
  const condition = fc.oneof(
    { arbitrary: fc.constantFrom('true', 'false', '', ' ', 'args.a is defined', 'target.name == ""', 'args.b | default(true)'), weight: 6 },
    str,
  );

  // One kind per source (more is an error of its own), with the modifiers any source may have.
  const varsKinds: Record<string, fc.Arbitrary<unknown>> = {
    values: smallDict,
    file: str,
    systemEnvVars: stringMap,
    clusterConfigMap: fc.record({ name: str, namespace: str, key: str }),
    // Never a reachable host: a closed local port fails at once.
    http: fc.record({ url: fc.constantFrom('http://127.0.0.1:1/x', 'not a url'), jsonPath: str }),
    vault: smallDict,
  };
  const varsSource = fc
    .tuple(
      fc
        .constantFrom(...Object.keys(varsKinds))
        .chain((kind) => mostly(varsKinds[kind] as fc.Arbitrary<unknown>).map((value) => ({ [kind]: value }))),
      kluctlRecord({
        targetPath: mostly(str),
        when: mostly(condition),
        ignoreMissing: mostly(fc.boolean()),
        noOverride: mostly(fc.boolean()),
        sensitive: mostly(fc.boolean()),
        multidoc: mostly(fc.boolean()),
      }),
    )
    .map(([kind, modifiers]) => ({ ...kind, ...modifiers }));

  const objectSelector = kluctlRecord({ group: str, kind: str, name: str, namespace: str });

  const deploymentItem = kluctlRecord({
    path: mostly(str),
    include: mostly(str),
    // A local repository that does not exist: refused by git at once, never a network fetch.
    git: mostly(fc.constantFrom('file:///nonexistent/repo.git', { url: 'file:///nonexistent/repo.git', ref: 'main' })),
    barrier: mostly(fc.boolean()),
    message: mostly(str),
    tags: mostly(stringList),
    vars: mostly(fc.array(varsSource, { maxLength: 2 })),
    when: mostly(condition),
    waitReadiness: mostly(fc.boolean()),
    deleteObjects: mostly(fc.array(objectSelector, { maxLength: 2 })),
    waitReadinessObjects: mostly(fc.array(objectSelector, { maxLength: 2 })),
    recursive: mostly(fc.boolean()),
    onlyRender: mostly(fc.boolean()),
    alwaysDeploy: mostly(fc.boolean()),
    skipDeleteIfTags: mostly(fc.boolean()),
    args: mostly(smallDict),
    passVars: mostly(fc.boolean()),
    ...(wrongKinds ? { oci: smallDict } : {}),
  });

  const ignoreRule = {
    kind: str,
    name: str,
    fieldPath: mostly(fc.oneof(str, stringList)),
    fieldPathRegex: mostly(fc.oneof(fc.constantFrom('(', '[a-', '(a+)+$', '.*'), stringList)),
  };
  const conflictRule = { ...ignoreRule, action: mostly(fc.constantFrom('ignore', 'force-apply')) };

  const project = {
    deployments: mostly(fc.array(deploymentItem, { maxLength: 4 })),
    vars: mostly(fc.array(varsSource, { maxLength: 3 })),
    commonLabels: mostly(stringMap),
    commonAnnotations: mostly(stringMap),
    overrideNamespace: mostly(str),
    tags: mostly(stringList),
    ignoreForDiff: mostly(fc.array(kluctlRecord(ignoreRule), { maxLength: 2 })),
    conflictResolution: mostly(fc.array(kluctlRecord(conflictRule, ['action']), { maxLength: 2 })),
    templateExcludes: mostly(stringList),
  };
  // Only an included project may have `when` (the root's is an error of its own).
  const deployment = kluctlRecord(wrongKinds ? { ...project, when: condition } : project);
  const included = kluctlRecord({ ...project, when: mostly(condition) });

  const argDefinition = kluctlRecord({ name: mostly(argName), default: fc.jsonValue({ maxDepth: 2 }) }, ['name']);

  const fixedImage = kluctlRecord({ image: str, imageRegex: str, resultImage: str, namespace: str });

  const target = kluctlRecord(
    {
      name: mostly(str),
      context: mostly(str),
      args: mostly(smallDict),
      images: mostly(fc.array(fixedImage, { maxLength: 2 })),
      discriminator: mostly(str),
      aws: mostly(smallDict),
    },
    ['name'],
  );

  const kluctl = kluctlRecord({
    targets: mostly(fc.array(target, { maxLength: 3 })),
    args: mostly(fc.array(argDefinition, { maxLength: 3 })),
    discriminator: mostly(str),
    aws: mostly(smallDict),
  });

  const library = kluctlRecord({ args: mostly(fc.array(argDefinition, { maxLength: 2 })) });

  /** `-a name=value` arguments as the CLI passes them. */
  const args = fc.array(
    fc
      .tuple(
        argName,
        fc.oneof(
          str,
          fc.jsonValue({ maxDepth: 1 }).map((value) => JSON.stringify(value)),
        ),
      )
      .map(([name, value]) => `${name}=${value}`),
    { maxLength: 3 },
  );
  return { kluctl, deployment, included, library, args };
}

/** YAML-ish and plain noise, spliced into a document's text or standing for it. */
const noise = fc.oneof(
  fc.constantFrom(':', '- ', '[', '{', '}', '\n', '\t', '&a ', '*a', '<<: *a', '!!binary ', '"', "'", '#', ...TEMPLATES),
  fc.string({ maxLength: 20 }),
);

/** A document's text: its YAML, its YAML with noise spliced in, or noise alone. */
export function fileText(document: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const yaml = document.map((value) => toYaml(value));
  return fc.oneof(
    { arbitrary: yaml, weight: 12 },
    fc
      .tuple(yaml, fc.nat(), noise)
      .map(([text, at, inserted]) => text.slice(0, at % (text.length + 1)) + inserted + text.slice(at % (text.length + 1))),
    fc.array(noise, { maxLength: 20 }).map((parts) => parts.join('')),
  );
}

/** How long one load may take before it counts as a hang (Jinja2 renders included; a first render starts Python). */
const LOAD_LIMIT_MS = 10_000;

/** File names the loaders' errors must name (one of them, or the argument for a bad `-a`). */
const NAMED = /\.kluctl(-library)?\.ya?ml|deployment\.ya?ml|vars\.yaml|argument/;

/** Loads still running, e.g. one the time budget cut off; the renderer must outlive them. */
const running = new Set<Promise<unknown>>();

/** Resolves when every load started by expectLoadedOrRefused has ended (call before closing the renderer). */
export async function loadsSettled(): Promise<void> {
  await Promise.allSettled([...running]);
}

/**
 * Writes `files` (relative path → text) into a fresh folder with the folders `a`, `b` and `sub`, and loads it as the
 * engine does, selecting `targetName` with `args`. Checks that the load ends, within LOAD_LIMIT_MS, in items inside
 * the project or in an error that is not a crash and names the file (with the field, for a schema error), and that
 * nothing was added to Object.prototype.
 */
export async function expectLoadedOrRefused(
  files: Record<string, string>,
  selection: { targetName: string | undefined; args: string[] },
  renderer: JinjaPool,
): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-fuzz-'));
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype);
  try {
    for (const folder of ['a', 'b', 'sub']) await mkdir(path.join(dir, folder));
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(dir, file), text);
    // Abandoned at the limit, so a load that never ends stops rendering instead of running beside later cases.
    const abandon = new AbortController();
    const loading = load(dir, selection, renderer, abandon.signal);
    running.add(loading);
    void loading.catch(() => undefined).finally(() => running.delete(loading));
    const outcome = await withinLimit(LOAD_LIMIT_MS, 'loading the project', loading, () => abandon.abort()).then(
      (items) => ({ items }),
      (error: unknown) => ({ error }),
    );
    if ('error' in outcome) {
      const { error } = outcome;
      expect(isCrash(error), String((error as Error)?.stack ?? error)).toBe(false);
      const message = (error as Error).message;
      expect(message, message).not.toMatch(/did not finish within/);
      expect(message, message).toMatch(NAMED);
      if (error instanceof ProblemList) for (const problem of error.problems) expect(problem, problem).toMatch(/^\/.*: /);
    } else {
      for (const item of outcome.items) if (item.dir !== undefined) expect(isInside(dir, item.dir), item.dir).toBe(true);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
    const added = Object.getOwnPropertyNames(Object.prototype).filter((key) => !prototypeKeys.includes(key));
    // Removed before failing, so one polluting case does not fail every later one.
    for (const key of added) delete (Object.prototype as Record<string, unknown>)[key];
    expect(added, 'keys added to Object.prototype').toEqual([]);
  }
}

async function load(dir: string, selection: { targetName: string | undefined; args: string[] }, renderer: JinjaPool, signal: AbortSignal) {
  const project = await loadKluctlProject(dir);
  const resolved = await resolveTarget(
    project,
    {
      targetName: selection.targetName,
      externalArgs: await parseArgs(selection.args),
      contextOverride: undefined,
      defaultContext: 'ctx',
      signal,
    },
    renderer,
  );
  const environment = { ...testProjectEnvironment(renderer), signal };
  return loadDeploymentItems(dir, { target: resolved.templateValue, args: resolved.args }, environment);
}
