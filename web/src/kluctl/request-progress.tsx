/**
 * What the controller is doing about this KluctlDeployment, read from the object itself so every viewer sees it,
 * whoever asked: requests not taken up yet (their annotation is still there), requests running (an answer without
 * an end), a spec change not reconciled yet (suspend, an approval), and the Reconciling condition's step.
 */
import { Spinner } from '../ui/spinner.tsx';
import { condition, specPending } from './kluctl-health.ts';
import { type KluctlDeployment, REQUEST_ANNOTATIONS, REQUEST_KINDS, type RequestKind } from './kluctl-resource.ts';

export function RequestProgress({ deployment }: { deployment: KluctlDeployment }) {
  const lines = progressLines(deployment);
  if (lines.length === 0) return null;
  return (
    <div className="progress-lines">
      {lines.map((line) => (
        <p key={line} className="progress" role="status">
          <Spinner /> {line}
        </p>
      ))}
    </div>
  );
}

/** Request kinds asked for and not answered yet: their buttons wait. */
export function requestsInFlight(deployment: KluctlDeployment): Set<RequestKind> {
  return new Set(REQUEST_KINDS.filter((kind) => requested(deployment, kind) || running(deployment, kind)));
}

function progressLines(deployment: KluctlDeployment): string[] {
  const step = condition(deployment, 'Reconciling');
  const doing = step?.status === 'True' ? `: ${step.message}` : '';
  const lines: string[] = [];
  for (const kind of REQUEST_KINDS) {
    if (running(deployment, kind)) lines.push(`${capitalized(kind)} running${doing}…`);
    else if (requested(deployment, kind)) lines.push(`${capitalized(kind)} requested, waiting for the controller…`);
  }
  if (specPending(deployment) && !deployment.metadata.deletionTimestamp)
    lines.push(`Waiting for the controller to reconcile the change (generation ${deployment.metadata.generation})…`);
  if (lines.length === 0 && doing) lines.push(`Reconciling${doing}…`);
  return lines;
}

function requested(deployment: KluctlDeployment, kind: RequestKind): boolean {
  return deployment.metadata.annotations?.[REQUEST_ANNOTATIONS[kind]] !== undefined;
}

function running(deployment: KluctlDeployment, kind: RequestKind): boolean {
  const answer = deployment.status?.[`${kind}RequestResult`];
  return answer !== undefined && !answer.endTime;
}

function capitalized(word: string): string {
  return `${word[0]?.toUpperCase() ?? ''}${word.slice(1)}`;
}
