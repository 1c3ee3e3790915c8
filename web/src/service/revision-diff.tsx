/**
 * The difference between two revisions of a service: what each one deploys (commit, source, renderer, namespace,
 * contexts) as YAML, compared line by line. The API keeps no rendered manifests per revision, so this is the
 * revisions' recorded source, not the objects they rendered to.
 */
import { diffLines } from 'diff';
import { useState } from 'react';
import { stringify } from 'yaml';
import type { Revision } from '../api/types.ts';

/** `revisions` newest first; until the user picks, the newest is compared with the one before. */
export function RevisionDiff({ revisions }: { revisions: Revision[] }) {
  const [picked, setPicked] = useState<{ from: number; to: number }>();
  const { from, to } = picked ?? { from: revisions[1]!.number, to: revisions[0]!.number };
  const setFrom = (number: number) => setPicked({ from: number, to });
  const setTo = (number: number) => setPicked({ from, to: number });
  const byNumber = (number: number) => revisions.find((revision) => revision.number === number)!;
  const parts = diffLines(revisionText(byNumber(from)), revisionText(byNumber(to)));
  const picker = (label: string, value: number, onChange: (number: number) => void) => (
    <select aria-label={label} value={value} onChange={(event) => onChange(Number(event.target.value))}>
      {revisions.map((revision) => (
        <option key={revision.number} value={revision.number}>
          #{revision.number}
        </option>
      ))}
    </select>
  );
  return (
    <section aria-label="Revision diff">
      <h3>
        Compare {picker('From revision', from, setFrom)} with {picker('To revision', to, setTo)}
      </h3>
      <pre className="code diff">
        {parts.map((part, index) => (
          <span key={index} className={part.added ? 'added' : part.removed ? 'removed' : undefined}>
            {prefixed(part.value, part.added ? '+ ' : part.removed ? '- ' : '  ')}
          </span>
        ))}
      </pre>
    </section>
  );
}

function revisionText(revision: Revision): string {
  const { commit, digest, chartVersion, namespace, git, helm, renderer, contexts } = revision;
  return stringify({ commit, digest, chartVersion, namespace, git, helm, renderer, contexts });
}

function prefixed(text: string, prefix: string): string {
  return text.replace(/^(?=.)/gm, prefix);
}
