/**
 * The difference between two revisions of a service: what each one deploys (commit, source, renderer, namespace,
 * contexts) as YAML, compared line by line, and below it the files of their sources that differ, as the server
 * compares their tarballs (GET …/revisions/diff). Rendered objects are not kept per revision: agents render.
 */
import { useQuery } from '@tanstack/react-query';
import { diffLines } from 'diff';
import { useState } from 'react';
import { stringify } from 'yaml';
import { fleet } from '../api/fleet.ts';
import type { Revision, Service } from '../api/types.ts';
import { QueryView } from '../ui/query-view.tsx';

/** `revisions` newest first; until the user picks, the newest is compared with the one before. */
export function RevisionDiff({ service, revisions }: { service: Service; revisions: Revision[] }) {
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
      <SourceDiff service={service} from={from} to={to} />
    </section>
  );
}

/** The source files that differ, one unified diff each; the same revision twice differs in nothing. */
function SourceDiff({ service, from, to }: { service: Service; from: number; to: number }) {
  const files = useQuery({
    queryKey: ['services', service.cluster, service.name, 'diff', from, to],
    queryFn: () => fleet.revisionDiff(service.cluster, service.name, from, to),
    enabled: from !== to,
  });
  if (from === to) return null;
  return (
    <QueryView query={files} what="source files">
      {(diff) => (
        <section aria-label="Source files diff">
          <h3>
            Source files <span className="count">{diff.files.length}</span>
          </h3>
          {diff.files.length === 0 && (
            <p className="muted">
              The sources of #{from} and #{to} are the same.
            </p>
          )}
          {diff.files.map((file) => (
            <div key={file.path} data-file={file.path}>
              <p>
                <code>{file.path}</code> <span className="tag">{file.change}</span>
              </p>
              <pre className="code diff">
                {file.patch.split('\n').map((line, index) => (
                  <span key={index} className={lineClass(line)}>
                    {`${line}\n`}
                  </span>
                ))}
              </pre>
            </div>
          ))}
        </section>
      )}
    </QueryView>
  );
}

function lineClass(line: string): string | undefined {
  if (line.startsWith('+') && !line.startsWith('+++')) return 'added';
  if (line.startsWith('-') && !line.startsWith('---')) return 'removed';
  return undefined;
}

function revisionText(revision: Revision): string {
  const { commit, digest, chartVersion, namespace, git, helm, renderer, contexts } = revision;
  return stringify({ commit, digest, chartVersion, namespace, git, helm, renderer, contexts });
}

function prefixed(text: string, prefix: string): string {
  return text.replace(/^(?=.)/gm, prefix);
}
