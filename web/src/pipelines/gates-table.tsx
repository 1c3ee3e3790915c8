/**
 * Every gate of the pipeline, by edge, with its state for the source stage's current context (a JOB gate's Job log
 * under its reason, once the Job finished), and the decisions
 * the user may take: approve or reject an APPROVAL gate (approvers, writers, admins of the pipeline), force any
 * closed or pending gate open (admins of the fleet). Until the server said what the user may do, no button shows.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { fleet } from '../api/fleet.ts';
import type { Edge, Gate, GateDecision, Pipeline } from '../api/types.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { Spinner } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { GateBadge } from './gate-badge.tsx';

export interface GateRights {
  mayApprove: boolean;
  mayForce: boolean;
}

export function GatesTable({ pipeline, rights }: { pipeline: Pipeline; rights: GateRights | undefined }) {
  const rows = pipeline.edges.flatMap((edge) => edge.gates.map((gate) => ({ edge, gate })));
  return (
    <section aria-label="Gates">
      <h2>Gates</h2>
      {rights && !rights.mayApprove && !rights.mayForce && rows.length > 0 && (
        <p className="muted">Read-only: deciding these gates needs an approver's, writer's or admin's role on this pipeline.</p>
      )}
      <table>
        <thead>
          <tr>
            <th>Edge</th>
            <th>Gate</th>
            <th>Type</th>
            <th>State</th>
            <th>Why</th>
            <th>Decided</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map(({ edge, gate }) => (
            <tr key={`${edge.from}/${edge.to}/${gate.name}`} data-gate={gate.name}>
              <td>
                {edge.from} → {edge.to}
              </td>
              <td>{gate.name}</td>
              <td>{gate.type}</td>
              <td>
                <GateBadge gate={gate} />
              </td>
              <td>
                {gate.reason ?? <span className="muted">—</span>}
                {gate.logs && (
                  <details className="gate-logs">
                    <summary>Job log</summary>
                    <pre>{gate.logs}</pre>
                  </details>
                )}
              </td>
              <td>
                {gate.decidedBy ? (
                  <>
                    {gate.decidedBy}
                    {gate.forced && ' (forced)'}, <TimeAgo time={gate.updatedAt} />
                  </>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td className="actions">{rights && <GateActions pipeline={pipeline.name} edge={edge} gate={gate} {...rights} />}</td>
            </tr>
          ))}
          {rows.length === 0 && <EmptyRow columns={7} text="No gates: every edge promotes as soon as its source stage is healthy." />}
        </tbody>
      </table>
    </section>
  );
}

function GateActions(props: { pipeline: string; edge: Edge; gate: Gate } & GateRights) {
  const { gate } = props;
  const queryClient = useQueryClient();
  const decide = useMutation({
    mutationFn: (decision: GateDecision) => fleet.decideGate(props.pipeline, props.edge, gate.name, decision),
    onSuccess: (pipeline) => {
      queryClient.setQueryData(['pipelines', props.pipeline], pipeline);
      void queryClient.invalidateQueries({ queryKey: ['pipelines', props.pipeline] });
    },
  });
  const approval = props.mayApprove && gate.type === 'APPROVAL';
  const running = (decision: GateDecision) => decide.isPending && decide.variables === decision;
  return (
    <span className="buttons">
      {approval && gate.state !== 'OPEN' && (
        <button type="button" className="primary" disabled={decide.isPending} onClick={() => decide.mutate('approve')}>
          {running('approve') && <Spinner />} Approve
        </button>
      )}
      {approval && gate.state === 'PENDING' && (
        <button type="button" disabled={decide.isPending} onClick={() => decide.mutate('reject')}>
          {running('reject') && <Spinner />} Reject
        </button>
      )}
      {props.mayForce && gate.state !== 'OPEN' && (
        <ConfirmButton
          label="Force"
          confirmLabel="Force open"
          run={() => decide.mutateAsync('force')}
          pending={running('force')}
          error={null}
        />
      )}
      {decide.isError && (
        <span className="error" role="alert">
          {decide.error.message}
        </span>
      )}
    </span>
  );
}
