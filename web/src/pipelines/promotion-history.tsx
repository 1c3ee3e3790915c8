/** The pipeline's promotions, newest first: which context went along which edge, to which revisions, past which gates. */
import { usePromotions } from '../api/queries.ts';
import { EmptyRow } from '../ui/empty-row.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { shortRef } from '../service/source-text.ts';

export function PromotionHistory({ pipeline }: { pipeline: string }) {
  const promotions = usePromotions(pipeline);
  return (
    <section aria-label="Promotion history">
      <h2>Promotion history</h2>
      <QueryView query={promotions} what="promotions">
        {(all) => (
          <table>
            <thead>
              <tr>
                <th>When</th>
                <th>Edge</th>
                <th>Services</th>
                <th>Gates passed</th>
              </tr>
            </thead>
            <tbody>
              {all.map((promotion) => (
                <tr key={promotion.id} data-promotion={`${promotion.from}-${promotion.to}`}>
                  <td>
                    <TimeAgo time={promotion.createdAt} />
                  </td>
                  <td>
                    {promotion.from} → {promotion.to}
                  </td>
                  <td>
                    {promotion.services.length === 0 && <span className="muted">nothing to promote</span>}
                    {promotion.services.map((service) => (
                      <div key={`${service.cluster}/${service.name}`}>
                        {service.cluster}/{service.name} #{service.revision}{' '}
                        <span className="source">{service.commit ? shortRef(service.commit) : service.chartVersion}</span>{' '}
                        <span className="muted">
                          from {service.source}
                          {service.secrets.length > 0 && `, with ${service.secrets.join(', ')}`}
                        </span>
                      </div>
                    ))}
                  </td>
                  <td>
                    {promotion.gates.length === 0 && <span className="muted">none</span>}
                    {promotion.gates.map((gate) => (
                      <div key={gate.name}>
                        {gate.name}
                        {gate.decidedBy && <span className="muted"> by {gate.decidedBy}</span>}
                        {gate.forced && <span className="tag warn">forced</span>}
                      </div>
                    ))}
                  </td>
                </tr>
              ))}
              {all.length === 0 && <EmptyRow columns={4} text="No promotions yet." />}
            </tbody>
          </table>
        )}
      </QueryView>
    </section>
  );
}
