/**
 * What a writer may ask of a KluctlDeployment (kluctl-actions.ts): reconcile, diff and validate at a click, a diff
 * of another branch, tag or commit before it is merged, deploy and prune after a second one, suspend or resume, and approve the rendered objects when spec.manual holds
 * them back. The server says first whether the user may (POST /v1/access-review, `write` on the cluster); a
 * reader sees why there are no buttons. A request's button waits until the controller answered it; when it
 * answers one sent from here with a result, that result is shown.
 */
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { useAllowed } from '../api/queries.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';
import { Spinner } from '../ui/spinner.tsx';
import { useKluctlAction } from './kluctl-actions.ts';
import { awaitingApproval } from './kluctl-health.ts';
import { type KluctlDeployment, kluctlPage, type RequestKind } from './kluctl-resource.ts';
import { requestsInFlight, RequestProgress } from './request-progress.tsx';

export function KluctlActionsBar({ cluster, deployment }: { cluster: string; deployment: KluctlDeployment }) {
  const allowed = useAllowed([{ action: 'write', cluster }]);
  const mayWrite = allowed?.[0] === true;
  const approval = awaitingApproval(deployment);
  return (
    <section aria-label="Actions" className="kluctl-actions">
      {mayWrite && <ActionButtons cluster={cluster} deployment={deployment} />}
      {allowed && !mayWrite && (
        <p className="muted">Read-only: reconciling, deploying and suspending need a writer's or admin's role on {cluster}.</p>
      )}
      {approval && <Approval cluster={cluster} deployment={deployment} hash={approval} mayWrite={mayWrite} />}
      <RequestProgress deployment={deployment} />
    </section>
  );
}

function ActionButtons({ cluster, deployment }: { cluster: string; deployment: KluctlDeployment }) {
  const action = useKluctlAction(cluster, deployment);
  const inFlight = requestsInFlight(deployment);
  const shown = useResultOfRequestFromHere(cluster, deployment);
  const request = (kind: RequestKind, overridesPatch?: Record<string, unknown>) => {
    const requestValue = new Date().toISOString();
    shown.expect(kind, requestValue);
    return action.mutateAsync({ kind: 'request', request: kind, requestValue, ...(overridesPatch ? { overridesPatch } : {}) });
  };
  const sending = (kind: RequestKind) => action.isPending && action.variables.kind === 'request' && action.variables.request === kind;
  const button = (kind: RequestKind, label: string) => (
    <button type="button" disabled={inFlight.has(kind) || sending(kind)} onClick={() => void request(kind).catch(() => undefined)}>
      {(inFlight.has(kind) || sending(kind)) && <Spinner />} {label}
    </button>
  );
  const suspended = deployment.spec.suspend === true;
  return (
    <div className="buttons action-bar">
      {button('reconcile', 'Reconcile')}
      {button('diff', 'Diff')}
      {button('validate', 'Validate')}
      <ConfirmButton label="Deploy" confirmLabel="Confirm deploy" run={() => request('deploy')} pending={sending('deploy')} error={null} />
      <ConfirmButton label="Prune" confirmLabel="Confirm prune" run={() => request('prune')} pending={sending('prune')} error={null} />
      <button
        type="button"
        disabled={action.isPending && action.variables.kind === 'suspend'}
        onClick={() => action.mutate({ kind: 'suspend', suspend: !suspended })}
      >
        {action.isPending && action.variables.kind === 'suspend' && <Spinner />} {suspended ? 'Resume' : 'Suspend'}
      </button>
      {action.isError && (
        <span className="error" role="alert">
          {action.error.message}
        </span>
      )}
      <DiffRefForm deployment={deployment} busy={inFlight.has('diff') || sending('diff')} diff={(patch) => request('diff', patch)} />
    </div>
  );
}

type RefKind = 'branch' | 'tag' | 'commit';

/**
 * A diff of another branch, tag or commit of the deployment's git source, before it is merged: the controller's
 * diff request with the source's ref overridden for that run only (a server-side dry run; nothing is deployed).
 * Only for a git source given in the resource (a Flux sourceRef's ref is the GitRepository's, and OCI has tags).
 */
function DiffRefForm(props: { deployment: KluctlDeployment; busy: boolean; diff: (patch: Record<string, unknown>) => Promise<unknown> }) {
  const [kind, setKind] = useState<RefKind>('branch');
  const [ref, setRef] = useState('');
  const source = props.deployment.spec.source;
  if (!source?.git && !source?.url) return null;
  const refPatch = { branch: null, tag: null, commit: null, semver: null, [kind]: ref.trim() };
  const patch = source.git ? { source: { git: { ref: refPatch } } } : { source: { ref: refPatch } };
  return (
    <form
      className="diff-ref"
      aria-label="Diff another ref"
      onSubmit={(event) => {
        event.preventDefault();
        if (ref.trim()) void props.diff(patch).catch(() => undefined);
      }}
    >
      <select aria-label="Ref kind" value={kind} onChange={(event) => setKind(event.target.value as RefKind)}>
        <option value="branch">branch</option>
        <option value="tag">tag</option>
        <option value="commit">commit</option>
      </select>
      <input aria-label="Ref to diff" placeholder="feature/new-settings" value={ref} onChange={(event) => setRef(event.target.value)} />
      <button type="submit" disabled={props.busy || !ref.trim()}>
        {props.busy && <Spinner />} Diff ref
      </button>
    </form>
  );
}

function Approval(props: { cluster: string; deployment: KluctlDeployment; hash: string; mayWrite: boolean }) {
  const action = useKluctlAction(props.cluster, props.deployment);
  return (
    <div className="waiting approval" role="status">
      <span>
        Waiting for approval: the rendered objects (hash <code>{props.hash.slice(0, 12)}</code>) are deployed once approved
        {props.deployment.status?.lastDiffResult ? '; the last diff shows what would change.' : '; a diff shows what would change.'}
      </span>
      {props.mayWrite && (
        <ConfirmButton
          label="Approve"
          confirmLabel="Confirm approval"
          run={() => action.mutateAsync({ kind: 'approve', hash: props.hash })}
          pending={action.isPending}
          error={action.error}
        />
      )}
    </div>
  );
}

/**
 * Remembers the request sent from this page; once the controller answers exactly that one with a stored result,
 * the page shows the result.
 */
function useResultOfRequestFromHere(cluster: string, deployment: KluctlDeployment) {
  const navigate = useNavigate();
  const [expected, setExpected] = useState<{ kind: RequestKind; requestValue: string }>();
  const answer = expected && deployment.status?.[`${expected.kind}RequestResult`];
  const resultId = answer?.request.requestValue === expected?.requestValue && answer?.endTime ? answer?.resultId : undefined;
  useEffect(() => {
    if (!resultId) return;
    setExpected(undefined);
    void navigate(`${kluctlPage(cluster, deployment)}?result=${encodeURIComponent(resultId)}`, { replace: true });
  }, [resultId, cluster, deployment, navigate]);
  return { expect: (kind: RequestKind, requestValue: string) => setExpected({ kind, requestValue }) };
}
