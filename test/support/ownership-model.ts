/**
 * The oracle of the ownership property test (test/e2e/ownership.test.ts): which objects must exist after a history
 * of project edits, foreign writes and Gantry commands, computed from the history alone — never from the cluster or
 * Gantry's code.
 *
 * The rules are Kluctl's, as its docs and its `FindObjectsForDelete` state them:
 * - a target's objects are found only by its discriminator label (`kluctl.io/discriminator`);
 * - of those, prune and delete skip objects outside the tag selection (their `kluctl.io/tag-<i>` labels), objects
 *   with ownerReferences, and objects the field manager never wrote — unless annotated `kluctl.io/force-managed` —,
 *   and objects annotated `kluctl.io/skip-delete` or `helm.sh/resource-policy: keep`, or `kluctl.io/skip-delete-if-tags`
 *   while selecting by tags;
 * - only selected items are rendered and applied; prune (and deploy --prune) deletes what the selection's render no
 *   longer produces, delete everything it finds;
 * - a dry run (`diff`, and every command with `--dry-run`) reports what its command would delete and changes nothing.
 */

export type Kind = 'ConfigMap' | 'Parcel' | 'ClusterRole';
/** The test's namespaces: projects deploy to A and B; F holds foreign objects named as project objects are. */
export type Space = 'A' | 'B' | 'F';
export type Item = 'a' | 'b';
/** An annotation that keeps an object from prune and delete (skip-delete-if-tags only while selecting by tags). */
export type Keep = 'skip-delete' | 'resource-policy' | 'skip-delete-if-tags';
export type Verb = WritingVerb | 'diff' | `${WritingVerb} --dry-run`;
type WritingVerb = 'deploy' | 'deploy --prune' | 'prune' | 'delete';

/** The command a dry-run verb pretends to run (`diff` is a dry run of deploy), or undefined for a verb that writes. */
export function dryRunOf(verb: Verb): WritingVerb | undefined {
  if (verb === 'diff') return 'deploy';
  return verb.endsWith(' --dry-run') ? (verb.slice(0, -' --dry-run'.length) as WritingVerb) : undefined;
}

/** `-I`/`-E` over the two items' tags (each item is tagged with its own name). */
export interface Selection {
  include: Item[];
  exclude: Item[];
}

/** One object of a project, in slot `slot` of its target's name pool. */
export interface DesiredObject {
  slot: number;
  kind: Kind;
  /** Ignored for the cluster-scoped ClusterRole. */
  space: 'A' | 'B';
  item: Item;
  keep?: Keep | undefined;
}

export interface Project {
  /** Index into the target's pool of two discriminators. */
  discriminator: number;
  objects: DesiredObject[];
}

/** What of a live object decides whether Gantry may delete it. */
export interface LiveObject {
  kind: Kind;
  /** '' for cluster-scoped objects. */
  space: Space | '';
  name: string;
  discriminator?: string | undefined;
  tags: Item[];
  /** Written by Gantry's field manager. */
  gantry: boolean;
  ownerReferences: boolean;
  forceManaged: boolean;
  keep?: Keep | undefined;
  /** Written by the test as someone else would, not by a Gantry command. */
  foreign: boolean;
}

export const TARGETS = [0, 1] as const;
export const SLOTS = 4;

/** The history's state: each target's project, and every object the test's universe holds. */
export class OwnershipModel {
  readonly projects: Project[] = TARGETS.map(() => ({ discriminator: 0, objects: [] }));
  readonly live = new Map<string, LiveObject>();

  readonly run: string;

  constructor(run: string) {
    this.run = run;
  }

  discriminator(target: number, index = this.projects[target]!.discriminator): string {
    return `${this.run}-t${target}-${index}`;
  }

  /** The name of a target's object in `slot`: cluster-scoped names carry the run, as they share the cluster. */
  objectName(target: number, slot: number, kind: Kind): string {
    return kind === 'ClusterRole' ? `${this.run}-t${target}-o${slot}` : `t${target}-o${slot}`;
  }

  desiredKey(target: number, object: DesiredObject): string {
    return liveKey(object.kind, object.kind === 'ClusterRole' ? '' : object.space, this.objectName(target, object.slot, object.kind));
  }

  /** Sets (or with undefined removes) the project object in `slot`: adds, moves, renames through kind, re-annotates. */
  setObject(target: number, slot: number, object: DesiredObject | undefined): void {
    const project = this.projects[target]!;
    project.objects = project.objects.filter((entry) => entry.slot !== slot);
    if (object) project.objects.push(object);
    project.objects.sort((x, y) => x.slot - y.slot);
  }

  addForeign(object: LiveObject): void {
    this.live.set(keyOf(object), object);
  }

  /** Applies a command's effect; returns the keys it must delete (a dry run: report deleted), sorted. */
  command(target: number, verb: Verb, selection: Selection): string[] {
    const pretended = dryRunOf(verb);
    if (pretended) {
      const live = new Map(this.live);
      const deleted = this.command(target, pretended, selection);
      this.live.clear();
      for (const [key, object] of live) this.live.set(key, object);
      return deleted;
    }
    const discriminator = this.discriminator(target);
    const rendered = new Set<string>();
    if (verb !== 'delete') {
      for (const object of this.projects[target]!.objects.filter((entry) => isSelected([entry.item], selection))) {
        const key = this.desiredKey(target, object);
        rendered.add(key);
        if (verb !== 'prune') this.live.set(key, this.applied(target, object, discriminator));
      }
    }
    if (verb === 'deploy') return [];
    const deleted = [...this.live.entries()]
      .filter(([key, object]) => !rendered.has(key) && isDeletable(object, discriminator, selection))
      .map(([key]) => key)
      .sort();
    for (const key of deleted) this.live.delete(key);
    return deleted;
  }

  private applied(target: number, object: DesiredObject, discriminator: string): LiveObject {
    return {
      kind: object.kind,
      space: object.kind === 'ClusterRole' ? '' : object.space,
      name: this.objectName(target, object.slot, object.kind),
      discriminator,
      tags: [object.item],
      gantry: true,
      ownerReferences: false,
      forceManaged: false,
      keep: object.keep,
      foreign: false,
    };
  }
}

export function liveKey(kind: Kind, space: Space | '', name: string): string {
  return `${kind}/${space}/${name}`;
}

export function keyOf(object: Pick<LiveObject, 'kind' | 'space' | 'name'>): string {
  return liveKey(object.kind, object.space, object.name);
}

/** Kluctl's inclusion check by tags: an excluded tag wins; with inclusions, one must match. */
export function isSelected(tags: readonly Item[], selection: Selection): boolean {
  if (tags.some((tag) => selection.exclude.includes(tag))) return false;
  return selection.include.length === 0 || tags.some((tag) => selection.include.includes(tag));
}

function isDeletable(object: LiveObject, discriminator: string, selection: Selection): boolean {
  if (object.discriminator !== discriminator) return false;
  if (!isSelected(object.tags, selection)) return false;
  if (!object.forceManaged && (object.ownerReferences || !object.gantry)) return false;
  const byTags = selection.include.length + selection.exclude.length > 0;
  if (object.keep === 'skip-delete-if-tags') return !byTags;
  return object.keep === undefined;
}
