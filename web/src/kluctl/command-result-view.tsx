/**
 * One command result in full, as Kluctl reports it: what ran on which target and when, its changes counted, its
 * errors and warnings, every changed object with its diff (cluster → rendered), and the new, deleted and orphan
 * objects and applied hooks, each object linked to its Live page.
 */
import { ApiError } from '../../../src/client/fleet-client.ts';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { UnifiedDiff } from '../ui/unified-diff.tsx';
import { useCommandResult } from './command-result.ts';
import type { ObjectRef, ResultMessage, StoredResult } from './kluctl-resource.ts';
import { ObjectRefLink, refText } from './object-ref-link.tsx';
import { ResultCounts } from './result-counts.tsx';

export function CommandResultView({ cluster, id }: { cluster: string; id: string }) {
  const stored = useCommandResult(cluster, id);
  if (stored.isPending) return <LoadingPage what="the command result" />;
  if (stored.isError) {
    if (stored.error instanceof ApiError && stored.error.status === 404)
      return <p className="waiting">Result {id} is no longer kept: the controller keeps the newest few of each target.</p>;
    return <ErrorMessage error={stored.error} />;
  }
  return <StoredResultView cluster={cluster} stored={stored.data} />;
}

function StoredResultView({ cluster, stored }: { cluster: string; stored: StoredResult }) {
  const { commandInfo, result } = stored;
  const summary = {
    newObjects: result.newObjects.length,
    changedObjects: result.changedObjects.length,
    deletedObjects: result.deletedObjects.length,
    orphanObjects: result.orphanObjects.length,
    appliedHooks: result.appliedHooks.length,
    errors: result.errors.map((error) => error.message),
    warnings: result.warnings.map((warning) => warning.message),
  };
  return (
    <section className="command-result" aria-label="Command result" data-command={commandInfo.command}>
      <h3>
        {commandInfo.command} of target {commandInfo.target} <TimeAgo time={commandInfo.endTime} /> <ResultCounts summary={summary} />
      </h3>
      <Messages cluster={cluster} title="Errors" messages={result.errors} className="error-box" />
      <Messages cluster={cluster} title="Warnings" messages={result.warnings} className="waiting" />
      {result.changedObjects.length > 0 && (
        <section aria-label="Changed objects">
          <h4>Changed objects</h4>
          {result.changedObjects.map((changed) => (
            <details key={refText(changed)} open className="changed-object" data-changed={refText(changed)}>
              <summary>
                <ObjectRefLink cluster={cluster} object={changed} />
              </summary>
              <UnifiedDiff diff={changed.diff} label={`Diff of ${refText(changed)}`} />
            </details>
          ))}
        </section>
      )}
      <Objects cluster={cluster} title="New objects" objects={result.newObjects} />
      <Objects cluster={cluster} title="Deleted objects" objects={result.deletedObjects} />
      <Objects cluster={cluster} title="Orphan objects" objects={result.orphanObjects} />
      <Objects cluster={cluster} title="Applied hooks" objects={result.appliedHooks} />
    </section>
  );
}

function Objects({ cluster, title, objects }: { cluster: string; title: string; objects: ObjectRef[] }) {
  if (objects.length === 0) return null;
  return (
    <section aria-label={title}>
      <h4>
        {title} <span className="count">{objects.length}</span>
      </h4>
      <ul className="ref-list">
        {objects.map((object) => (
          <li key={refText(object)}>
            <ObjectRefLink cluster={cluster} object={object} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function Messages(props: { cluster: string; title: string; messages: ResultMessage[]; className: string }) {
  if (props.messages.length === 0) return null;
  return (
    <ul className={`messages ${props.className}`} aria-label={props.title}>
      {props.messages.map((message, index) => (
        <li key={index}>
          {message.object && (
            <>
              <ObjectRefLink cluster={props.cluster} object={message.object} />:{' '}
            </>
          )}
          {message.message}
        </li>
      ))}
    </ul>
  );
}
