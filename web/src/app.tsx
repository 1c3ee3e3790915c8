/**
 * The pages by path, behind the login. On a fleet server: the fleet, pipelines, global services, KluctlDeployments and Live for every
 * cluster, with live updates, and the user's own password; under `gantry webui` (session/ui-mode.tsx): only
 * KluctlDeployments and Live, for its one cluster, whose watches and polls keep them current.
 */
import { Link, Navigate, Route, Routes } from 'react-router';
import { LiveUpdates } from './api/live-updates.tsx';
import { FleetPage } from './fleet/fleet-page.tsx';
import { GlobalServicePage } from './globalservices/global-service-page.tsx';
import { GlobalServicesPage } from './globalservices/global-services-page.tsx';
import { KluctlDeploymentPage } from './kluctl/kluctl-deployment-page.tsx';
import { KluctlDeploymentsPage } from './kluctl/kluctl-deployments-page.tsx';
import { Shell } from './layout/shell.tsx';
import { LivePage } from './live/live-page.tsx';
import { NamespacePage } from './live/namespace-page.tsx';
import { NamespacesPage } from './live/namespaces-page.tsx';
import { ObjectPage } from './live/object-page.tsx';
import { PipelinePage } from './pipelines/pipeline-page.tsx';
import { PipelinesPage } from './pipelines/pipelines-page.tsx';
import { ServicePage } from './service/service-page.tsx';
import { PASSWORD_PATH, PasswordPage } from './session/password-page.tsx';
import { SessionGate } from './session/session.tsx';
import { UiModeGate, useUiMode } from './session/ui-mode.tsx';

export function App() {
  return (
    <UiModeGate>
      <SessionGate>
        <Pages />
      </SessionGate>
    </UiModeGate>
  );
}

function Pages() {
  if (useUiMode().kind === 'local')
    return (
      <Shell>
        <Routes>
          <Route path="/" element={<Navigate to="/kluctl" replace />} />
          {clusterPages()}
          <Route path="*" element={<NoPage home="/kluctl" name="KluctlDeployments" />} />
        </Routes>
      </Shell>
    );
  return (
    <LiveUpdates>
      <Shell>
        <Routes>
          <Route path="/" element={<Navigate to="/fleet" replace />} />
          <Route path="/fleet" element={<FleetPage />} />
          <Route path="/fleet/:cluster/:name/:tab?" element={<ServicePage />} />
          <Route path="/pipelines" element={<PipelinesPage />} />
          <Route path="/pipelines/:name" element={<PipelinePage />} />
          <Route path="/globalservices" element={<GlobalServicesPage />} />
          <Route path="/globalservices/:name" element={<GlobalServicePage />} />
          <Route path={PASSWORD_PATH} element={<PasswordPage />} />
          {clusterPages()}
          <Route path="*" element={<NoPage home="/fleet" name="fleet" />} />
        </Routes>
      </Shell>
    </LiveUpdates>
  );
}

/** The pages of what runs in clusters, read through the auth proxy (or gantry webui's own). */
function clusterPages() {
  return (
    <>
      <Route path="/kluctl" element={<KluctlDeploymentsPage />} />
      <Route path="/kluctl/:cluster/:namespace/:name/:tab?" element={<KluctlDeploymentPage />} />
      <Route path="/live" element={<LivePage />} />
      <Route path="/live/:cluster" element={<NamespacesPage />} />
      <Route path="/live/:cluster/ns/:namespace/:tab?" element={<NamespacePage />} />
      <Route path="/live/:cluster/ns/:namespace/:resource/:name" element={<ObjectPage />} />
    </>
  );
}

function NoPage({ home, name }: { home: string; name: string }) {
  return (
    <p className="muted">
      There is no page here. See the <Link to={home}>{name}</Link>.
    </p>
  );
}
