import { describe, expect, it } from 'vitest';
import { compareVersions, newestVersion, parseConstraint, parseVersion, satisfies } from './semver.ts';

function check(constraint: string, version: string): boolean {
  const parsed = parseVersion(version);
  if (!parsed) throw new Error(`not a version: ${version}`);
  return satisfies(parsed, parseConstraint(constraint));
}

describe('versions', () => {
  it('parses the loose forms Masterminds accepts', () => {
    expect(parseVersion('v1.2')).toMatchObject({ major: 1, minor: 2, patch: 0, prerelease: '', original: 'v1.2' });
    expect(parseVersion('1.2.3-rc.1+build.5')).toMatchObject({ major: 1, minor: 2, patch: 3, prerelease: 'rc.1' });
    expect(parseVersion('01.002.3')).toMatchObject({ major: 1, minor: 2, patch: 3 });
    expect(parseVersion('latest')).toBeUndefined();
    expect(parseVersion('1.2.3.4')).toBeUndefined();
  });

  it('orders releases after their pre-releases, numeric identifiers numerically and before words', () => {
    const sorted = ['1.0.0', '1.0.0-rc.10', '1.0.0-alpha', '1.0.0-rc.2', '0.9.9', '1.0.0-alpha.1', '1.0.0-1']
      .map((text) => parseVersion(text)!)
      .sort(compareVersions)
      .map((version) => version.original);
    expect(sorted).toEqual(['0.9.9', '1.0.0-1', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-rc.2', '1.0.0-rc.10', '1.0.0']);
    expect(compareVersions(parseVersion('1.2.3+a')!, parseVersion('1.2.3+b')!)).toBe(0);
  });
});

describe('constraints, as Masterminds/semver v3 checks them', () => {
  const cases: Array<[string, string, boolean]> = [
    ['1.2.3', '1.2.3', true],
    ['=1.2', '1.2.9', true],
    ['=1.2', '1.3.0', false],
    ['!=1.2.3', '1.2.4', true],
    ['!=1.2', '1.2.4', false],
    ['>1.2', '1.2.9', false],
    ['>1.2', '1.3.0', true],
    ['>1', '1.9.9', false],
    ['>1.2.3', '1.2.4', true],
    ['<2', '1.9.9', true],
    ['<1.2', '1.2.0', false],
    ['<=1.2', '1.2.9', true],
    ['<=1.2', '1.3.0', false],
    ['<=1.2.3', '1.2.4', false],
    ['>=1.2', '1.2.0', true],
    ['=>1.2', '1.1.9', false],
    ['~1.2.3', '1.2.9', true],
    ['~1.2.3', '1.3.0', false],
    ['~1.2.3', '1.2.2', false],
    ['~1', '1.9.0', true],
    ['~>1.2', '1.2.5', true],
    ['^1.2.3', '1.9.0', true],
    ['^1.2.3', '2.0.0', false],
    ['^0.2.3', '0.2.9', true],
    ['^0.2.3', '0.3.0', false],
    ['^0.0.3', '0.0.4', false],
    ['^0', '0.9.0', true],
    ['1.x', '1.5.0', true],
    ['1.2.*', '1.3.0', false],
    ['*', '3.0.0', true],
    ['>=1.0, <2.0', '1.5.0', true],
    ['>=1.0 <2.0', '2.0.0', false],
    ['^1 || ^3', '3.1.0', true],
    ['^1 || ^3', '2.1.0', false],
    ['1.2 - 1.4.5', '1.4.5', true],
    ['1.2 - 1.4.5', '1.4.6', false],
    ['v1.2.x', '1.2.3', true],
  ];
  it.each(cases)('%s against %s is %s', (constraint, version, expected) => {
    expect(check(constraint, version)).toBe(expected);
  });

  it('admits pre-releases only in a group with a pre-release comparator, but then for any version', () => {
    expect(check('*', '1.2.3-alpha.1')).toBe(false);
    expect(check('^1.2.0', '1.2.1-alpha.1')).toBe(false);
    expect(check('~1.2.3-0', '1.2.5-beta.1')).toBe(true);
    // node-semver would refuse this one: its pre-releases only match within the comparator's own x.y.z.
    expect(check('~1.2.3-beta.2', '1.2.4-beta.2')).toBe(true);
    expect(check('~1.2.3-beta.2', '1.3.0-beta.2')).toBe(false);
    expect(check('>=1.0.0-0 <2.0.0 || ^3', '3.0.0-rc.1')).toBe(false);
  });

  it('refuses text that is not a constraint, naming it', () => {
    expect(() => parseConstraint('~> one')).toThrow(/invalid version constraint '~> one'/);
    expect(() => parseConstraint('1.0 ||')).toThrow(/is not a constraint/);
  });
});

describe('newestVersion (kluctl GetLatestVersion)', () => {
  const offered = ['1.0.0', '1.0.1', '1.1.0', '2.0.0-rc.1', 'latest', 'v1.2.0'];
  it('picks the newest release without a constraint, keeping its spelling', () => {
    expect(newestVersion(offered, undefined)).toBe('v1.2.0');
  });
  it('picks the newest version the constraint allows', () => {
    expect(newestVersion(offered, '~1.0.0')).toBe('1.0.1');
    expect(newestVersion(offered, '>=1.0.0-0')).toBe('2.0.0-rc.1');
    expect(newestVersion(offered, '^3')).toBeUndefined();
  });
});
