/**
 * The global services: each one's selector, the service its copies run, where the copies are, and whether new
 * revisions roll out wave by wave. A name leads to the global service's page with its rollout.
 */
import { Link } from 'react-router';
import { useGlobalServices } from '../api/queries.ts';
import { EmptyRow } from '../ui/empty-row.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { selectorText } from './selector-text.ts';

export function GlobalServicesPage() {
  const globals = useGlobalServices();
  return (
    <>
      <h1>Global services</h1>
      <QueryView query={globals} what="global services">
        {(list) => (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Selector</th>
                <th>Service</th>
                <th>Clusters</th>
                <th>Rollout</th>
              </tr>
            </thead>
            <tbody>
              {list.map((global) => (
                <tr key={global.name} data-globalservice={global.name}>
                  <td>
                    <Link to={`/globalservices/${encodeURIComponent(global.name)}`}>{global.name}</Link>
                  </td>
                  <td>{selectorText(global)}</td>
                  <td>
                    {global.template.namespace}/{global.template.name}
                  </td>
                  <td>{global.services.map((service) => service.cluster).join(', ') || <span className="muted">none</span>}</td>
                  <td>{global.rollout ? `${global.rollout.waves.map((wave) => wave.name).join(' → ')} → rest` : 'all at once'}</td>
                </tr>
              ))}
              {list.length === 0 && <EmptyRow columns={5} text="No global services." />}
            </tbody>
          </table>
        )}
      </QueryView>
    </>
  );
}
