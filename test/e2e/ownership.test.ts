/**
 * Ownership, as a property over random histories on the real cluster: fast-check generates sequences of project
 * edits (objects added, removed, renamed through their kind, moved between namespaces and items, annotated to be
 * kept; discriminators changed), foreign writes (objects without labels, with a target's discriminator written by
 * another field manager, with another target's discriminator, named as project objects in another namespace,
 * cluster-scoped, instances of a CRD, with ownerReferences, force-managed, tagged) and Gantry commands (deploy,
 * deploy --prune, prune, delete, and their dry runs and diff, each with or without -I/-E) over two targets. After
 * every step the cluster must hold exactly what the oracle (test/support/ownership-model.ts), computed from the history
 * alone, says; every foreign object the oracle keeps is untouched (same resourceVersion); each command reports deleted
 * exactly what it deleted (a dry run: what it would delete, every object keeping its resourceVersion).
 *
 * A failure prints the shrunk history, and the seed and path that replay it (see test/fuzz/support/fuzz.ts);
 * `npm run soak` runs twenty times the histories.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployTarget } from '../../src/deploy/deploy.ts';
import { prepareTarget } from '../../src/target/prepare.ts';
import { deleteTarget, pruneTarget } from '../../src/deploy/prune.ts';
import type { CommandResult } from '../../src/deploy/result.ts';
import { Engine } from '../../src/engine.ts';
import type { Cluster } from '../../src/kube/cluster.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { splitApiVersion, type KubeObject } from '../../src/kube/object.ts';
import type { Progress } from '../../src/progress.ts';
import { DISCRIMINATOR_LABEL } from '../../src/render/postprocess.ts';
import { kubectl } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { writeProject } from '../support/fixtures.ts';
import {
  keyOf,
  liveKey,
  OwnershipModel,
  SLOTS,
  TARGETS,
  type DesiredObject,
  type Item,
  type Keep,
  type Kind,
  type LiveObject,
  type Selection,
  type Space,
  type Verb,
  dryRunOf,
} from '../support/ownership-model.ts';
import { fuzz, testTimeout, type Budget } from '../fuzz/support/fuzz.ts';

const RUN_LABEL = 'gantry-e2e-ownership';
const FOREIGN_MANAGER = 'e2e-foreign';
const PARCEL_CRD = 'parcels.ownership.e2e.gantry.dev';
const BUDGET: Budget = { runs: 15, ms: 90_000 };
const quiet: Progress = { step: () => undefined };

const API_VERSIONS: Record<Kind, string> = {
  ConfigMap: 'v1',
  Parcel: 'ownership.e2e.gantry.dev/v1',
  ClusterRole: 'rbac.authorization.k8s.io/v1',
};
const KEEP_ANNOTATIONS: Record<Keep, [string, string]> = {
  'skip-delete': ['kluctl.io/skip-delete', 'true'],
  'resource-policy': ['helm.sh/resource-policy', 'keep'],
  'skip-delete-if-tags': ['kluctl.io/skip-delete-if-tags', 'true'],
};

let engine: Engine;
let cluster: Cluster;
let steps = 0;

/** The cluster side of one history: its namespaces, its projects' folders, and what it wrote as a foreigner. */
class World {
  readonly model: OwnershipModel;
  private readonly projectDirs: string[] = [];
  /** resourceVersion of each foreign object as written, by model key. */
  private readonly foreignVersions = new Map<string, string>();
  private readonly owners = new Map<Space | '', KubeObject>();

  readonly run: string;

  private constructor(run: string) {
    this.run = run;
    this.model = new OwnershipModel(run);
  }

  static async create(): Promise<World> {
    const world = new World(`own-${randomBytes(3).toString('hex')}`);
    for (const space of ['A', 'B', 'F'] as const) {
      await cluster.apply(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: world.namespace(space), labels: { [RUN_LABEL]: world.run } } },
        { fieldManager: FOREIGN_MANAGER },
      );
    }
    for (const space of ['A', 'B', 'F', ''] as const) {
      const owner: LiveObject = {
        kind: space ? 'ConfigMap' : 'ClusterRole',
        space,
        name: space ? 'owner' : `${world.run}-owner`,
        tags: [],
        gantry: false,
        ownerReferences: false,
        forceManaged: false,
        foreign: true,
      };
      world.owners.set(space, await world.writeForeign(owner));
    }
    return world;
  }

  namespace(space: Space): string {
    return `${this.run}-${space.toLowerCase()}`;
  }

  /** Writes `object` as someone other than a Gantry command would, and tells the model. */
  async writeForeign(object: LiveObject): Promise<KubeObject> {
    const labels: Record<string, string> = { [RUN_LABEL]: this.run };
    if (object.discriminator) labels[DISCRIMINATOR_LABEL] = object.discriminator;
    object.tags.forEach((tag, index) => (labels[`kluctl.io/tag-${index}`] = tag));
    const annotations: Record<string, string> = {};
    if (object.forceManaged) annotations['kluctl.io/force-managed'] = 'true';
    if (object.keep) annotations[KEEP_ANNOTATIONS[object.keep][0]] = KEEP_ANNOTATIONS[object.keep][1];
    const owner = this.owners.get(object.space);
    const manifest = this.manifest(object.kind, object.space, object.name, labels, annotations);
    if (object.ownerReferences && owner) {
      manifest.metadata.ownerReferences = [
        { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name!, uid: owner.metadata.uid! },
      ];
    }
    const written = await cluster.apply(manifest, { fieldManager: object.gantry ? engine.config.fieldManager : FOREIGN_MANAGER });
    this.model.addForeign(object);
    this.foreignVersions.set(keyOf(object), written.metadata.resourceVersion!);
    return written;
  }

  manifest(kind: Kind, space: Space | '', name: string, labels: Record<string, string>, annotations: Record<string, string>): KubeObject {
    const metadata = { name, ...(space ? { namespace: this.namespace(space) } : {}), labels, annotations };
    const body = kind === 'ClusterRole' ? { rules: [] } : kind === 'Parcel' ? { spec: { size: 1 } } : { data: { value: name } };
    return { apiVersion: API_VERSIONS[kind], kind, metadata, ...body };
  }

  /** Runs `verb` on `target` as the CLI would (render, then deploy, prune or delete) and returns its result. */
  async command(target: number, verb: Verb, selection: Selection): Promise<CommandResult> {
    const dir = await writeProject(this.projectFiles(target));
    this.projectDirs.push(dir);
    const inclusion = { includeTags: selection.include, excludeTags: selection.exclude, includeDirs: [], excludeDirs: [] };
    const prepared = await prepareTarget({ projectDir: dir, target: 'default', args: {}, inclusion, fixedImages: [] }, engine, {
      kubeConfig: loadKubeConfig(),
      progress: quiet,
    });
    const dryRun = dryRunOf(verb) !== undefined;
    const command = dryRunOf(verb) ?? verb;
    const common = { dryRun, timeoutMs: 60_000, fieldManager: engine.config.fieldManager, progress: quiet };
    if (command === 'prune') return pruneTarget(prepared.rendered, cluster, common);
    if (command === 'delete') return deleteTarget(prepared.rendered, cluster, common);
    const behaviour = {
      forceApply: false,
      replaceOnError: false,
      forceReplaceOnError: false,
      abortOnError: false,
      readinessTimeoutMs: 60_000,
    };
    return deployTarget(prepared.rendered, cluster, { ...common, prune: command === 'deploy --prune', wait: !dryRun, behaviour });
  }

  private projectFiles(target: number): Record<string, string> {
    const files: Record<string, string> = {
      '.kluctl.yaml': `discriminator: ${this.model.discriminator(target)}\ntargets:\n  - name: default\n`,
      'deployment.yaml': 'deployments:\n  - path: a\n    tags: [a]\n  - path: b\n    tags: [b]\n',
    };
    for (const item of ['a', 'b'] as const) {
      const objects = this.model.projects[target]!.objects.filter((object) => object.item === item);
      files[`${item}/objects.yaml`] = objects.map((object) => JSON.stringify(this.desiredManifest(target, object))).join('\n---\n');
    }
    return files;
  }

  private desiredManifest(target: number, object: DesiredObject): KubeObject {
    const annotations: Record<string, string> = object.keep ? Object.fromEntries([KEEP_ANNOTATIONS[object.keep]]) : {};
    const space = object.kind === 'ClusterRole' ? '' : object.space;
    return this.manifest(
      object.kind,
      space,
      this.model.objectName(target, object.slot, object.kind),
      { [RUN_LABEL]: this.run },
      annotations,
    );
  }

  /** The test's objects in the cluster, by model key. */
  async liveObjects(): Promise<Map<string, KubeObject>> {
    const selector = `${RUN_LABEL}=${this.run}`;
    const objects = new Map<string, KubeObject>();
    for (const kind of ['ConfigMap', 'Parcel', 'ClusterRole'] as const) {
      const { group, version } = splitApiVersion(API_VERSIONS[kind]);
      for (const object of await cluster.list(await cluster.resourceFor({ group, version, kind }), selector)) {
        if (object.metadata.deletionTimestamp) continue;
        objects.set(liveKey(kind, this.spaceOf(object.metadata.namespace), object.metadata.name!), object);
      }
    }
    return objects;
  }

  /** resourceVersion of every object of the run, by model key. */
  async versions(): Promise<Record<string, string | undefined>> {
    const live = await this.liveObjects();
    return Object.fromEntries([...live].map(([key, object]) => [key, object.metadata.resourceVersion]));
  }

  spaceOf(namespace: string | undefined): Space | '' {
    if (!namespace) return '';
    const space = namespace.slice(this.run.length + 1).toUpperCase();
    if (space !== 'A' && space !== 'B' && space !== 'F') throw new Error(`object in unexpected namespace ${namespace}`);
    return space;
  }

  /** Throws naming every difference between the cluster and the oracle. */
  async verify(what: string): Promise<void> {
    steps += 1;
    const live = await this.liveObjects();
    const problems: string[] = [];
    for (const [key, expected] of this.model.live) {
      const object = live.get(key);
      if (!object) {
        problems.push(`${expected.foreign ? 'foreign' : 'owned'} object ${key} is gone, the oracle keeps it`);
        continue;
      }
      if (expected.foreign && object.metadata.resourceVersion !== this.foreignVersions.get(key)) {
        problems.push(
          `foreign object ${key} was changed (resourceVersion ${this.foreignVersions.get(key)} → ${object.metadata.resourceVersion})`,
        );
      }
      const label = object.metadata.labels?.[DISCRIMINATOR_LABEL];
      if (label !== expected.discriminator) problems.push(`${key} has discriminator ${label}, the oracle says ${expected.discriminator}`);
    }
    for (const key of live.keys()) if (!this.model.live.has(key)) problems.push(`${key} is left, the oracle deleted it`);
    if (problems.length > 0) throw new Error(`after ${what}:\n  ${problems.join('\n  ')}`);
  }

  async cleanUp(): Promise<void> {
    await Promise.all(this.projectDirs.map((dir) => rm(dir, { recursive: true, force: true })));
    const selector = `${RUN_LABEL}=${this.run}`;
    await kubectl(['delete', 'clusterroles,namespaces', '-l', selector, '--wait=false']);
  }
}

const formatSelection = (selection: Selection) =>
  [...selection.include.map((tag) => `-I ${tag}`), ...selection.exclude.map((tag) => `-E ${tag}`)].join(' ');

class SetObject implements fc.AsyncCommand<OwnershipModel, World> {
  readonly target: number;
  readonly slot: number;
  readonly object: Omit<DesiredObject, 'slot'> | undefined;
  constructor(target: number, slot: number, object: Omit<DesiredObject, 'slot'> | undefined) {
    this.target = target;
    this.slot = slot;
    this.object = object;
  }
  check = () => true;
  async run(model: OwnershipModel): Promise<void> {
    model.setObject(this.target, this.slot, this.object && { ...this.object, slot: this.slot });
  }
  toString(): string {
    const object = this.object;
    if (!object) return `t${this.target}: remove o${this.slot}`;
    return `t${this.target}: o${this.slot} = ${object.kind} in ${object.space}, item ${object.item}${object.keep ? `, ${object.keep}` : ''}`;
  }
}

class SetDiscriminator implements fc.AsyncCommand<OwnershipModel, World> {
  readonly target: number;
  readonly index: number;
  constructor(target: number, index: number) {
    this.target = target;
    this.index = index;
  }
  check = () => true;
  async run(model: OwnershipModel): Promise<void> {
    model.projects[this.target]!.discriminator = this.index;
  }
  toString(): string {
    return `t${this.target}: discriminator ${this.index}`;
  }
}

class RunCommand implements fc.AsyncCommand<OwnershipModel, World> {
  readonly target: number;
  readonly verb: Verb;
  readonly selection: Selection;
  constructor(target: number, verb: Verb, selection: Selection) {
    this.target = target;
    this.verb = verb;
    this.selection = selection;
  }
  check = () => true;
  async run(model: OwnershipModel, world: World): Promise<void> {
    const before = dryRunOf(this.verb) ? await world.versions() : undefined;
    const result = await world.command(this.target, this.verb, this.selection);
    const expected = model.command(this.target, this.verb, this.selection);
    expect(result.errors, `errors of ${this}`).toEqual([]);
    const reported = result.deletedObjects.map((ref) => liveKey(ref.kind as Kind, world.spaceOf(ref.namespace), ref.name)).sort();
    expect(reported, `objects ${this} reports deleted`).toEqual(expected);
    if (before) expect(await world.versions(), `objects after ${this}, a dry run`).toEqual(before);
    await world.verify(String(this));
  }
  toString(): string {
    return `gantry ${this.verb} t${this.target}${this.selection.include.length + this.selection.exclude.length > 0 ? ` ${formatSelection(this.selection)}` : ''}`;
  }
}

/** A foreign object before its run is known: the name is made from the run, the discriminator is [target, index]. */
type ForeignSpec = Omit<LiveObject, 'discriminator' | 'foreign' | 'name'> & {
  name: (run: string) => string;
  discriminator?: [number, number] | undefined;
};

class WriteForeign implements fc.AsyncCommand<OwnershipModel, World> {
  readonly object: ForeignSpec;
  constructor(object: ForeignSpec) {
    this.object = object;
  }
  check(model: OwnershipModel): boolean {
    return !model.live.has(keyOf({ ...this.object, name: this.object.name(model.run) }));
  }
  async run(model: OwnershipModel, world: World): Promise<void> {
    const discriminator = this.object.discriminator && model.discriminator(...this.object.discriminator);
    await world.writeForeign({ ...this.object, name: this.object.name(model.run), discriminator, foreign: true });
    await world.verify(String(this));
  }
  toString(): string {
    const { kind, space, discriminator, gantry, ownerReferences, forceManaged, keep, tags } = this.object;
    const traits = [
      discriminator ? `discriminator t${discriminator[0]}-${discriminator[1]}` : 'no discriminator',
      gantry ? "gantry's field manager" : 'another field manager',
      ...(ownerReferences ? ['ownerReferences'] : []),
      ...(forceManaged ? ['force-managed'] : []),
      ...(keep ? [keep] : []),
      ...(tags.length > 0 ? [`tags ${tags.join(',')}`] : []),
    ];
    return `foreign ${kind} ${this.object.name('RUN')} in ${space || 'the cluster'}: ${traits.join(', ')}`;
  }
}

const target = fc.constantFrom(...TARGETS);
const item = fc.constantFrom<Item>('a', 'b');
const keep = fc.option(fc.constantFrom<Keep>('skip-delete', 'resource-policy', 'skip-delete-if-tags'), { nil: undefined, freq: 3 });
const tags = fc.subarray<Item>(['a', 'b']);

const setObject = fc
  .tuple(
    target,
    fc.nat(SLOTS - 1),
    fc.option(
      fc.record({
        kind: fc.constantFrom<Kind>('ConfigMap', 'ConfigMap', 'Parcel', 'ClusterRole'),
        space: fc.constantFrom<'A' | 'B'>('A', 'B'),
        item,
        keep,
      }),
      {
        freq: 4,
        nil: undefined,
      },
    ),
  )
  .map(([t, slot, object]) => new SetObject(t, slot, object));

const setDiscriminator = fc.tuple(target, fc.nat(1)).map(([t, index]) => new SetDiscriminator(t, index));

const selection: fc.Arbitrary<Selection> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Selection>({ include: [], exclude: [] }) },
  { weight: 1, arbitrary: item.map((tag) => ({ include: [tag], exclude: [] })) },
  { weight: 1, arbitrary: item.map((tag) => ({ include: [], exclude: [tag] })) },
);
const runCommand = fc
  .tuple(
    target,
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<Verb>('deploy', 'deploy --prune', 'deploy --prune', 'prune', 'delete') },
      {
        weight: 1,
        arbitrary: fc.constantFrom<Verb>('diff', 'deploy --dry-run', 'deploy --prune --dry-run', 'prune --dry-run', 'delete --dry-run'),
      },
    ),
    selection,
  )
  .map(([t, verb, chosen]) => new RunCommand(t, verb, chosen));

/** Foreign objects: named apart from project objects, except in namespace F where they take project objects' names. */
const foreignPlace = fc.oneof(
  fc
    .record({ kind: fc.constantFrom<Kind>('ConfigMap', 'Parcel'), space: fc.constantFrom<Space>('A', 'B'), slot: fc.nat(SLOTS - 1) })
    .map((place) => ({
      ...place,
      name: () => `f${place.slot}`,
    })),
  fc.record({ kind: fc.constantFrom<Kind>('ConfigMap', 'Parcel'), target, slot: fc.nat(SLOTS - 1) }).map((place) => ({
    kind: place.kind,
    space: 'F' as Space | '',
    name: () => `t${place.target}-o${place.slot}`,
  })),
  fc.nat(SLOTS - 1).map((slot) => ({ kind: 'ClusterRole' as Kind, space: '' as Space | '', name: (run: string) => `${run}-f${slot}` })),
);
const writeForeign = fc
  .record({
    place: foreignPlace,
    discriminator: fc.option(fc.tuple(target, fc.nat(1)), { nil: undefined, freq: 4 }),
    gantry: fc.boolean(),
    ownerReferences: fc.boolean(),
    forceManaged: fc.boolean(),
    keep,
    tags,
  })
  .map(
    ({ place, ...traits }) =>
      new WriteForeign({
        kind: place.kind,
        space: place.space,
        name: place.name,
        ...traits,
        ...(traits.discriminator ? {} : { discriminator: undefined }),
      }),
  );

const histories = fc.commands([setObject, setObject, setObject, setDiscriminator, runCommand, runCommand, runCommand, writeForeign], {
  maxCommands: 40,
  size: '+1',
});

beforeAll(async () => {
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(parcelCrd()));
  await kubectl(['wait', '--for=condition=Established', `crd/${PARCEL_CRD}`, '--timeout=60s']);
  // Each command lists every listable resource (as Kluctl's do): hundreds of commands in one process would otherwise
  // spend most of their time in the client-side rate limit, which a CLI run never reaches.
  engine = new Engine(testConfig({ kubeApi: { qps: 1000, burst: 1000, requestTimeoutMs: 60_000 } }));
  cluster = engine.clusters.get(loadKubeConfig());
});

afterAll(async () => {
  await engine?.close();
});

describe('ownership over random histories', () => {
  it(
    'deletes exactly what the oracle says: no foreign object touched, no owned object left',
    async () => {
      const started = performance.now();
      await fuzz(
        'ownership',
        fc.asyncProperty(histories, async (commands) => {
          const world = await World.create();
          try {
            await fc.asyncModelRun(() => ({ model: world.model, real: world }), commands);
          } finally {
            await world.cleanUp();
          }
        }),
        BUDGET,
      );
      console.info(`ownership: ${steps} verified steps in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    },
    testTimeout(BUDGET),
  );
});

function parcelCrd(): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: PARCEL_CRD },
    spec: {
      group: 'ownership.e2e.gantry.dev',
      scope: 'Namespaced',
      names: { plural: 'parcels', singular: 'parcel', kind: 'Parcel', listKind: 'ParcelList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}
