/**
 * Semantic versions and version constraints with the rules of Masterminds/semver v3, the library Kluctl and Helm
 * use for `updateConstraints` and chart versions. node-semver differs where it matters here: Masterminds lets a
 * constraint group with any pre-release comparator match pre-releases of every version, reads `1.2` as a
 * wildcard, and joins comparators with commas or spaces; so the rules are reproduced rather than borrowed.
 */

export interface Version {
  major: number;
  minor: number;
  patch: number;
  /** Pre-release identifiers joined by dots (`rc.1`); empty for a release. */
  prerelease: string;
  /** The text the version was parsed from (`v1.2`). */
  original: string;
}

// Masterminds' loose form (CoerceNewVersion): optional `v`, optional minor and patch, leading zeros allowed.
const VERSION = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

/** Parses `text` as Masterminds' NewVersion does; undefined when it is not a version. */
export function parseVersion(text: string): Version | undefined {
  const match = VERSION.exec(text);
  if (!match) return undefined;
  return {
    major: Number(match[1]),
    minor: Number(match[2] ?? 0),
    patch: Number(match[3] ?? 0),
    prerelease: match[4] ?? '',
    original: text,
  };
}

/** -1, 0 or 1 as `a` sorts before, with or after `b` (build metadata ignored, as semver defines). */
export function compareVersions(a: Version, b: Version): number {
  for (const key of ['major', 'minor', 'patch'] as const) {
    if (a[key] !== b[key]) return a[key] < b[key] ? -1 : 1;
  }
  if (a.prerelease === b.prerelease) return 0;
  if (!a.prerelease) return 1;
  if (!b.prerelease) return -1;
  const left = a.prerelease.split('.');
  const right = b.prerelease.split('.');
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const order = comparePrereleasePart(left[index], right[index]);
    if (order !== 0) return order;
  }
  return 0;
}

/** Numeric identifiers sort numerically and before alphanumeric ones; a missing identifier sorts first. */
function comparePrereleasePart(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  const aNumeric = /^\d+$/.test(a);
  const bNumeric = /^\d+$/.test(b);
  if (aNumeric && bNumeric) return Number(a) < Number(b) ? -1 : 1;
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : 1;
}

type Operator = '' | '=' | '!=' | '>' | '<' | '>=' | '<=' | '~' | '^';

interface Comparator {
  operator: Operator;
  /** The comparator's version with wildcard or missing parts as 0. */
  version: Version;
  /** Which parts were wildcards or missing: `1.x` has minor (and patch) dirty. */
  minorDirty: boolean;
  patchDirty: boolean;
  dirty: boolean;
}

/** OR-groups of AND-ed comparators; a group containing a pre-release comparator also admits pre-releases. */
export interface Constraint {
  text: string;
  groups: Array<{ comparators: Comparator[]; includePrerelease: boolean }>;
}

const PART = '[0-9xX*]+';
const CONSTRAINT_VERSION = `v?(${PART})(\\.${PART})?(\\.${PART})?(-[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?(\\+[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?`;
const OPERATORS = '!=|>=|=>|<=|=<|~>|~|\\^|>|<|=|';
const COMPARATOR = new RegExp(`(${OPERATORS})\\s*(${CONSTRAINT_VERSION})`, 'g');
const GROUP = new RegExp(
  `^\\s*(?:${OPERATORS})\\s*${CONSTRAINT_VERSION}\\s*(?:(?:\\s+|,\\s*)(?:${OPERATORS})\\s*${CONSTRAINT_VERSION}\\s*)*$`,
);
const HYPHEN_RANGE = new RegExp(`\\s*(${CONSTRAINT_VERSION})\\s+-\\s+(${CONSTRAINT_VERSION})\\s*`, 'g');

/**
 * Parses a constraint such as `~1.2.3`, `>=1.0, <2.0`, `^2 || 3.x`, `1.2 - 1.4.5`.
 * @throws Error naming the part that is not a constraint.
 */
export function parseConstraint(text: string): Constraint {
  const rewritten = text.replace(HYPHEN_RANGE, (_match, from: string, ...rest: string[]) => `>= ${from}, <= ${rest[5]} `);
  const groups = rewritten.split('||').map((group) => {
    if (!GROUP.test(group)) throw new Error(`invalid version constraint '${text}': '${group.trim()}' is not a constraint`);
    const comparators = [...group.matchAll(COMPARATOR)].map((match) => parseComparator(match[1] as string, match.slice(3)));
    return { comparators, includePrerelease: comparators.some((comparator) => comparator.version.prerelease !== '') };
  });
  return { text, groups };
}

function parseComparator(operator: string, parts: Array<string | undefined>): Comparator {
  const [major = '', minorPart = '', patchPart = '', prereleasePart = ''] = parts;
  const isWildcard = (part: string) => part === '' || /^[xX*]$/.test(part.replace(/^\./, ''));
  const prerelease = prereleasePart.replace(/^-/, '');
  const normalized = ({ '=>': '>=', '=<': '<=', '~>': '~' } as Record<string, Operator>)[operator] ?? (operator as Operator);
  const version = (maj: string, min: string, pat: string): Version => ({
    major: Number(maj),
    minor: Number(min),
    patch: Number(pat),
    prerelease,
    original: `${maj}.${min}.${pat}`,
  });
  if (isWildcard(major))
    return { operator: normalized, version: version('0', '0', '0'), minorDirty: false, patchDirty: false, dirty: true };
  if (isWildcard(minorPart))
    return { operator: normalized, version: version(major, '0', '0'), minorDirty: true, patchDirty: false, dirty: true };
  if (isWildcard(patchPart))
    return { operator: normalized, version: version(major, minorPart.slice(1), '0'), minorDirty: false, patchDirty: true, dirty: true };
  return {
    operator: normalized,
    version: version(major, minorPart.slice(1), patchPart.slice(1)),
    minorDirty: false,
    patchDirty: false,
    dirty: false,
  };
}

/** True when `version` satisfies `constraint` (Masterminds' Constraints.Check). */
export function satisfies(version: Version, constraint: Constraint): boolean {
  return constraint.groups.some(
    (group) => (group.includePrerelease || !version.prerelease) && group.comparators.every((comparator) => matches(version, comparator)),
  );
}

function matches(v: Version, c: Comparator): boolean {
  const order = compareVersions(v, c.version);
  switch (c.operator) {
    case '':
    case '=':
      return c.dirty ? tilde(v, c, order) : order === 0;
    case '!=':
      return notEqual(v, c, order);
    case '>':
      if (!c.dirty) return order > 0;
      if (v.major !== c.version.major) return v.major > c.version.major;
      if (c.minorDirty) return false;
      return c.patchDirty ? v.minor > c.version.minor : order > 0;
    case '<':
      return order < 0;
    case '>=':
      return order >= 0;
    case '<=':
      if (!c.dirty) return order <= 0;
      if (v.major > c.version.major) return false;
      return !(v.major === c.version.major && v.minor > c.version.minor && !c.minorDirty);
    case '~':
      return tilde(v, c, order);
    case '^':
      return caret(v, c, order);
  }
}

function notEqual(v: Version, c: Comparator, order: number): boolean {
  if (!c.dirty) return order !== 0;
  if (c.version.major !== v.major) return true;
  if (c.minorDirty) return false;
  if (c.version.minor !== v.minor) return true;
  if (c.patchDirty) return v.prerelease !== c.version.prerelease;
  return order !== 0;
}

function tilde(v: Version, c: Comparator, order: number): boolean {
  if (order < 0) return false;
  if (c.version.major === 0 && c.version.minor === 0 && c.version.patch === 0 && !c.minorDirty && !c.patchDirty) return true;
  if (v.major !== c.version.major) return false;
  return c.minorDirty || v.minor === c.version.minor;
}

function caret(v: Version, c: Comparator, order: number): boolean {
  if (order < 0) return false;
  if (c.version.major > 0 || c.minorDirty) return v.major === c.version.major;
  if (v.major > 0) return false;
  if (c.version.minor > 0 || c.patchDirty) return v.minor === c.version.minor;
  if (v.minor > 0) return false;
  return v.patch === c.version.patch;
}

/**
 * The newest of `versions` that `constraintText` allows, as kluctl's Chart.GetLatestVersion picks it: strings
 * that are not versions are skipped; without a constraint, pre-releases are skipped (`~1.2.3-0` admits them).
 * @returns the chosen string as given, or undefined when none qualifies.
 * @throws Error for an invalid constraint.
 */
export function newestVersion(versions: readonly string[], constraintText: string | undefined): string | undefined {
  const constraint = constraintText === undefined ? undefined : parseConstraint(constraintText);
  let newest: Version | undefined;
  for (const text of versions) {
    const version = parseVersion(text);
    if (!version) continue;
    const allowed = constraint ? satisfies(version, constraint) : !version.prerelease;
    if (allowed && (!newest || compareVersions(version, newest) > 0)) newest = version;
  }
  return newest?.original;
}
