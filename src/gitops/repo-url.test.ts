import { describe, expect, it } from 'vitest';
import type { KluctlDeployment } from '../api/kluctl-deployment.ts';
import { matchingDeployments, normalizeRepoUrl } from './repo-url.ts';

describe('normalizeRepoUrl', () => {
  it.each([
    ['https://github.com/org/repo.git', 'github.com/org/repo'],
    ['https://github.com/org/repo', 'github.com/org/repo'],
    ['https://github.com/org/repo/', 'github.com/org/repo'],
    ['https://github.com/org/repo.git/', 'github.com/org/repo'],
    ['https://user:secret@GitHub.com/Org/Repo.git', 'github.com/org/repo'],
    ['https://github.com:443/org/repo', 'github.com/org/repo'],
    ['http://github.com:80/org/repo', 'github.com/org/repo'],
    ['git@github.com:org/repo.git', 'github.com/org/repo'],
    ['github.com:org/repo', 'github.com/org/repo'],
    ['ssh://git@github.com/org/repo.git', 'github.com/org/repo'],
    ['ssh://git@github.com:22/org/repo.git', 'github.com/org/repo'],
    ['git://github.com/org/repo', 'github.com/org/repo'],
    ['  https://github.com/org/repo  ', 'github.com/org/repo'],
  ])('%s → %s', (url, expected) => {
    expect(normalizeRepoUrl(url)).toBe(expected);
  });

  it('keeps ports that are not the default of the scheme', () => {
    expect(normalizeRepoUrl('ssh://git@gitlab.example.com:2222/group/sub/repo.git')).toBe('gitlab.example.com:2222/group/sub/repo');
    expect(normalizeRepoUrl('https://gitea.local:3000/org/repo.git')).toBe('gitea.local:3000/org/repo');
  });

  it('keeps the host apart from the path so repositories of different hosts differ', () => {
    expect(normalizeRepoUrl('https://gitlab.com/org/repo')).not.toBe(normalizeRepoUrl('https://github.com/org/repo'));
    expect(normalizeRepoUrl('https://github.com/org/repo-two')).not.toBe(normalizeRepoUrl('https://github.com/org/repo'));
  });

  it('handles file URLs and local paths, keeping a repository folder named .git', () => {
    expect(normalizeRepoUrl('file:///srv/git/repo.git')).toBe('/srv/git/repo');
    expect(normalizeRepoUrl('/srv/git/repo.git/')).toBe('/srv/git/repo');
    expect(normalizeRepoUrl('file:///src/project/.git')).toBe('/src/project/.git');
  });

  it('gives undefined for text that is no URL', () => {
    expect(normalizeRepoUrl('')).toBeUndefined();
    expect(normalizeRepoUrl('not a url')).toBeUndefined();
    expect(normalizeRepoUrl('https://')).toBeUndefined();
  });
});

describe('matchingDeployments', () => {
  const deployment = (name: string, source: KluctlDeployment['spec']['source']): Pick<KluctlDeployment, 'spec'> & { name: string } => ({
    name,
    spec: { interval: '5m', source },
  });
  const deployments = [
    deployment('git-https', { git: { url: 'https://github.com/org/app.git' } }),
    deployment('git-ssh', { git: { url: 'git@github.com:org/app.git', path: 'deploy' } }),
    deployment('deprecated-url', { url: 'ssh://git@github.com/Org/App' }),
    deployment('other-repo', { git: { url: 'https://github.com/org/other.git' } }),
    deployment('other-host', { git: { url: 'https://gitlab.com/org/app.git' } }),
    deployment('oci', { oci: { url: 'oci://github.com/org/app' } }),
    deployment('no-source', undefined),
  ];

  it('finds every deployment of the pushed repository, however its URL is written', () => {
    const urls = ['https://github.com/org/app.git', 'git@github.com:org/app.git', 'https://github.com/org/app'];
    expect(matchingDeployments(deployments, urls).map((match) => match.name)).toEqual(['git-https', 'git-ssh', 'deprecated-url']);
  });

  it('matches nothing for another repository or no URLs', () => {
    expect(matchingDeployments(deployments, ['https://github.com/org/unknown'])).toEqual([]);
    expect(matchingDeployments(deployments, [])).toEqual([]);
  });
});
