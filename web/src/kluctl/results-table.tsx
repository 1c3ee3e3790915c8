/**
 * The last deploy, diff and validation the status summarizes (Kluctl's lastDeployResult, lastDiffResult,
 * lastValidateResult): when, at which revision, what changed, and a button to show each one in full.
 */
import { EmptyRow } from '../ui/empty-row.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import type { KluctlDeployment, ResultSummary } from './kluctl-resource.ts';
import { shortRevision } from './kluctl-source.ts';
import { ResultCounts } from './result-counts.tsx';

export function ResultsTable(props: { deployment: KluctlDeployment; selected: string | undefined; onSelect: (id: string) => void }) {
  const { status } = props.deployment;
  const rows = [
    { label: 'Deploy', summary: status?.lastDeployResult },
    { label: 'Diff', summary: status?.lastDiffResult },
    { label: 'Validate', summary: status?.lastValidateResult },
  ].filter((row): row is { label: string; summary: ResultSummary } => row.summary !== undefined);
  return (
    <table aria-label="Last results">
      <thead>
        <tr>
          <th>Last</th>
          <th>Finished</th>
          <th>Revision</th>
          <th>Changes</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {rows.map(({ label, summary }) => (
          <tr
            key={label}
            data-result-kind={label.toLowerCase()}
            className={summary.id && summary.id === props.selected ? 'selected' : undefined}
          >
            <td>
              {label}
              {summary.commandInfo.command !== label.toLowerCase() && <span className="muted"> ({summary.commandInfo.command})</span>}
            </td>
            <td>
              <TimeAgo time={summary.commandInfo.endTime} />
            </td>
            <td className="source">{shortRevision(summary.revision)}</td>
            <td>
              <ResultCounts summary={summary} />
            </td>
            <td className="actions">
              {summary.id ? (
                <button type="button" disabled={summary.id === props.selected} onClick={() => props.onSelect(summary.id)}>
                  {summary.id === props.selected ? 'Shown below' : 'Show'}
                </button>
              ) : (
                <span className="muted" title="the controller could not keep it">
                  not kept
                </span>
              )}
            </td>
          </tr>
        ))}
        {rows.length === 0 && <EmptyRow columns={5} text="No results yet: the controller has not deployed, diffed or validated it." />}
      </tbody>
    </table>
  );
}
