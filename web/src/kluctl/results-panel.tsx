/**
 * A KluctlDeployment's results: the last deploy, diff and validation, the answers to requests, the last drift
 * detection, and one result in full below them. Which one is in the URL (?result=…); until picked, the last
 * deploy's, so a reconcile that deploys shows its new result as it arrives.
 */
import { useSearchParams } from 'react-router';
import { CommandResultView } from './command-result-view.tsx';
import { DriftPanel } from './drift-panel.tsx';
import type { KluctlDeployment } from './kluctl-resource.ts';
import { RequestsTable } from './requests-table.tsx';
import { ResultsTable } from './results-table.tsx';

export function ResultsPanel({ cluster, deployment }: { cluster: string; deployment: KluctlDeployment }) {
  const [params, setParams] = useSearchParams();
  const selected = params.get('result') || deployment.status?.lastDeployResult?.id || undefined;
  const select = (id: string) => setParams({ result: id }, { replace: true });
  return (
    <>
      <div className="columns">
        <section aria-label="Results">
          <ResultsTable deployment={deployment} selected={selected} onSelect={select} />
        </section>
        <DriftPanel cluster={cluster} deployment={deployment} />
      </div>
      <RequestsTable deployment={deployment} selected={selected} onSelect={select} />
      {selected && <CommandResultView key={selected} cluster={cluster} id={selected} />}
    </>
  );
}
