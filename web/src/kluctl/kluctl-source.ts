/** Where a KluctlDeployment's project comes from, in one line: `url path @ ref`, a Flux GitRepository, or an OCI artifact. */
import type { KluctlDeployment } from './kluctl-resource.ts';

export function kluctlSourceText(deployment: KluctlDeployment): string {
  const { spec } = deployment;
  if (spec.sourceRef) return `${spec.sourceRef.kind} ${spec.sourceRef.namespace ?? deployment.metadata.namespace}/${spec.sourceRef.name}`;
  const git = spec.source?.git;
  if (git) return [repositoryName(git.url), git.path, refText(git.ref)].filter(Boolean).join(' ');
  if (spec.source?.oci) return [spec.source.oci.url, spec.source.oci.path].filter(Boolean).join(' ');
  if (spec.source?.url) return [repositoryName(spec.source.url), spec.source.path, refText(spec.source.ref)].filter(Boolean).join(' ');
  return '—';
}

/** A commit as git shortens it; other revisions (a Flux artifact's) as they are. */
export function shortRevision(revision: string | undefined): string {
  if (!revision) return '—';
  return /^[0-9a-f]{40}$/.test(revision) ? revision.slice(0, 7) : revision;
}

/** The repository's host and path, without the scheme and `.git`; a local repository by its folder. */
function repositoryName(url: string): string {
  return url.replace(/^[a-z+]+:\/\//, '').replace(/\.git$/, '');
}

function refText(ref: { branch?: string; tag?: string; commit?: string; semver?: string } | undefined): string {
  const named = ref?.branch ?? ref?.tag ?? ref?.semver ?? (ref?.commit && shortRevision(ref.commit));
  return named ? `@ ${named}` : '';
}
