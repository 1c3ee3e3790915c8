/** The pages by path, behind the login. */
import { Link, Navigate, Route, Routes } from 'react-router';
import { LiveUpdates } from './api/live-updates.tsx';
import { FleetPage } from './fleet/fleet-page.tsx';
import { Shell } from './layout/shell.tsx';
import { PipelinePage } from './pipelines/pipeline-page.tsx';
import { PipelinesPage } from './pipelines/pipelines-page.tsx';
import { ServicePage } from './service/service-page.tsx';
import { SessionGate } from './session/session.tsx';

export function App() {
  return (
    <SessionGate>
      <LiveUpdates>
        <Shell>
          <Routes>
            <Route path="/" element={<Navigate to="/fleet" replace />} />
            <Route path="/fleet" element={<FleetPage />} />
            <Route path="/fleet/:cluster/:name/:tab?" element={<ServicePage />} />
            <Route path="/pipelines" element={<PipelinesPage />} />
            <Route path="/pipelines/:name" element={<PipelinePage />} />
            <Route path="*" element={<NoPage />} />
          </Routes>
        </Shell>
      </LiveUpdates>
    </SessionGate>
  );
}

function NoPage() {
  return (
    <p className="muted">
      There is no page here. See the <Link to="/fleet">fleet</Link>.
    </p>
  );
}
