/**
 * How a service is configured: its source (with its extra sources), renderer or renderers, sync settings and relations, and the names of its
 * configuration and secret values. The values themselves are sealed on the server and never reach the browser.
 */
import { Fragment } from 'react';
import { stringify } from 'yaml';
import type { Service } from '../api/types.ts';
import { MASK } from './mask.ts';

export function ConfigurationPanel({ service }: { service: Service }) {
  return (
    <div className="columns">
      <section aria-label="Source">
        <h3>Source</h3>
        <dl className="facts vertical">
          {service.repository && (
            <>
              <dt>Repository</dt>
              <dd>{service.repository.url}</dd>
            </>
          )}
          {service.git && (
            <>
              <dt>Git ref</dt>
              <dd className="source">{service.git.ref}</dd>
              <dt>Folder</dt>
              <dd className="source">{service.git.folder || '/'}</dd>
            </>
          )}
          {service.helm && (
            <>
              <dt>Helm chart</dt>
              <dd className="source">
                {service.helm.chart} {service.helm.version} from {service.helm.url}
              </dd>
            </>
          )}
          {service.sources?.map((source) => (
            <Fragment key={source.path}>
              <dt>Source at {source.path}</dt>
              <dd className="source">
                {source.repository.url} {source.git.ref} {source.git.folder || '/'}
              </dd>
            </Fragment>
          ))}
          {service.renderers ? (
            <>
              <dt>Renderers</dt>
              <dd>
                {service.renderers
                  .map(
                    (renderer) => `${renderer.path} ${renderer.kind}${renderer.helm?.release ? ` (release ${renderer.helm.release})` : ''}`,
                  )
                  .join(', ')}
              </dd>
            </>
          ) : (
            <>
              <dt>Renderer</dt>
              <dd>
                {service.renderer.kind}
                {service.renderer.target && ` (target ${service.renderer.target})`}
              </dd>
            </>
          )}
          <dt>Templated</dt>
          <dd>{service.templated ? 'yes (*.liquid files rendered)' : 'no'}</dd>
          <dt>Contexts</dt>
          <dd>{service.contexts.join(', ') || '—'}</dd>
          <dt>Depends on</dt>
          <dd>{service.dependencies.join(', ') || '—'}</dd>
          <dt>Protected</dt>
          <dd>{service.protect ? 'yes (deletion refused)' : 'no'}</dd>
        </dl>
        {service.syncConfig && (
          <>
            <h3>Sync settings</h3>
            <pre className="code">{stringify(service.syncConfig)}</pre>
          </>
        )}
      </section>
      <section aria-label="Configuration">
        <h3>Configuration</h3>
        <MaskedValues keys={service.configuration} none="No configuration values." />
        {service.helm && (
          <>
            <h3>Secret Helm values</h3>
            <MaskedValues keys={service.secretValues} none="No secret values." />
          </>
        )}
        <p className="muted">Values are stored encrypted on the server and given in clear only to the cluster's agent.</p>
      </section>
    </div>
  );
}

function MaskedValues({ keys, none }: { keys: string[]; none: string }) {
  if (keys.length === 0) return <p className="muted">{none}</p>;
  return (
    <table className="compact">
      <tbody>
        {keys.map((key) => (
          <tr key={key}>
            <th scope="row">{key}</th>
            <td className="masked" aria-label={`${key} (hidden)`}>
              {MASK}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
