/**
 * The answers to manual requests (status.<kind>RequestResult, one per kind, the newest first): when each started,
 * whether it still runs, and its result or error. Whoever asked (this page, `gantry gitops`, Kluctl's tools), the
 * answer shows here.
 */
import { Spinner } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { type KluctlDeployment, type ManualRequestResult, REQUEST_KINDS, type RequestKind } from './kluctl-resource.ts';

export function RequestsTable(props: { deployment: KluctlDeployment; selected: string | undefined; onSelect: (id: string) => void }) {
  const answers = REQUEST_KINDS.flatMap((kind) => {
    const answer = props.deployment.status?.[`${kind}RequestResult`];
    return answer ? [{ kind, answer }] : [];
  }).sort((a, b) => b.answer.startTime.localeCompare(a.answer.startTime));
  if (answers.length === 0) return null;
  return (
    <section aria-label="Requests">
      <h3>Requests</h3>
      <table>
        <thead>
          <tr>
            <th>Request</th>
            <th>Started</th>
            <th>State</th>
            <th>Answer</th>
          </tr>
        </thead>
        <tbody>
          {answers.map(({ kind, answer }) => (
            <tr key={kind} data-request={kind}>
              <td>{kind}</td>
              <td>
                <TimeAgo time={answer.startTime} />
              </td>
              <td>
                <RequestState answer={answer} />
              </td>
              <td>
                <RequestAnswer kind={kind} answer={answer} selected={props.selected} onSelect={props.onSelect} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function RequestState({ answer }: { answer: ManualRequestResult }) {
  if (!answer.endTime)
    return (
      <span className="badge badge-progressing">
        <Spinner label="running" /> running
      </span>
    );
  return answer.commandError ? <span className="tag bad">failed</span> : <span className="tag ok">done</span>;
}

function RequestAnswer(props: {
  kind: RequestKind;
  answer: ManualRequestResult;
  selected: string | undefined;
  onSelect: (id: string) => void;
}) {
  const { answer } = props;
  return (
    <span className="request-answer">
      {answer.resultId && (
        <button type="button" disabled={answer.resultId === props.selected} onClick={() => props.onSelect(answer.resultId!)}>
          {answer.resultId === props.selected ? 'Shown below' : `Show the ${props.kind} result`}
        </button>
      )}
      {answer.commandError && <span className="error">{answer.commandError}</span>}
      {answer.endTime && !answer.resultId && !answer.commandError && (
        <span className="muted">
          {props.kind === 'reconcile' ? 'finished: nothing needed deploying' : 'finished; its result was not kept'}
        </span>
      )}
    </span>
  );
}
