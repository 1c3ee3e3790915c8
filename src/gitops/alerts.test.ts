import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Alert, AlertSpec } from '../api/alert.ts';
import { alertWatches, buildAlertRequest, severityAllowed, type AlertEvent } from './alerts.ts';

const alert = (spec: Partial<AlertSpec>, namespace = 'team-a'): Alert => ({
  apiVersion: 'gitops.gantry.dev/v1beta1',
  kind: 'Alert',
  metadata: { name: 'alert', namespace },
  spec: { type: 'generic', address: 'https://hooks.example.com/in', eventSources: [{ kind: 'KluctlDeployment', name: '*' }], ...spec },
});

const event: AlertEvent = {
  deployment: { namespace: 'team-a', name: 'shop', labels: { tier: 'frontend', env: 'prod' } },
  severity: 'error',
  reason: 'DeployFailed',
  message: 'deploy failed: team-a/Deployment/<web> & more',
  revision: 'main@sha1:0123abcd',
  summary: { newObjects: 1, changedObjects: 2, errors: 1 },
};
const NOW = new Date('2025-01-02T03:04:05.000Z');

describe('alertWatches', () => {
  const deployment = event.deployment;
  it("matches by name or '*' in the Alert's own namespace by default", () => {
    expect(alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: 'shop' }] }), deployment)).toBe(true);
    expect(alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: '*' }] }), deployment)).toBe(true);
    expect(alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: 'other' }] }), deployment)).toBe(false);
    expect(alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: '*' }] }, 'team-b'), deployment)).toBe(false);
  });

  it('matches another namespace only when the source names it', () => {
    expect(
      alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: 'shop', namespace: 'team-a' }] }, 'monitoring'), deployment),
    ).toBe(true);
    expect(alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: 'shop', namespace: 'team-b' }] }), deployment)).toBe(
      false,
    );
  });

  it('needs every matchLabels entry among the labels', () => {
    expect(
      alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: '*', matchLabels: { tier: 'frontend' } }] }), deployment),
    ).toBe(true);
    expect(
      alertWatches(
        alert({ eventSources: [{ kind: 'KluctlDeployment', name: '*', matchLabels: { tier: 'frontend', env: 'dev' } }] }),
        deployment,
      ),
    ).toBe(false);
    expect(
      alertWatches(alert({ eventSources: [{ kind: 'KluctlDeployment', name: '*', matchLabels: { tier: 'frontend' } }] }), {
        namespace: 'team-a',
        name: 'shop',
      }),
    ).toBe(false);
  });

  it('matches when any of several sources matches', () => {
    const sources = [
      { kind: 'KluctlDeployment' as const, name: 'other' },
      { kind: 'KluctlDeployment' as const, name: 'shop' },
    ];
    expect(alertWatches(alert({ eventSources: sources }), deployment)).toBe(true);
  });
});

describe('severityAllowed', () => {
  it('lets info Alerts (the default) take everything and error Alerts only errors', () => {
    expect(severityAllowed(alert({}), 'info')).toBe(true);
    expect(severityAllowed(alert({ eventSeverity: 'info' }), 'error')).toBe(true);
    expect(severityAllowed(alert({ eventSeverity: 'error' }), 'error')).toBe(true);
    expect(severityAllowed(alert({ eventSeverity: 'error' }), 'info')).toBe(false);
  });
});

describe('buildAlertRequest', () => {
  it("posts a generic event in Flux's event shape", () => {
    const request = buildAlertRequest(alert({ summary: 'cluster: prod-eu' }), event, {}, NOW);
    expect(request.address).toBe('https://hooks.example.com/in');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['authorization']).toBeUndefined();
    expect(request.headers['x-signature']).toBeUndefined();
    expect(JSON.parse(request.body)).toEqual({
      involvedObject: { apiVersion: 'gitops.gantry.dev/v1beta1', kind: 'KluctlDeployment', namespace: 'team-a', name: 'shop' },
      severity: 'error',
      timestamp: '2025-01-02T03:04:05.000Z',
      reason: 'DeployFailed',
      message: 'deploy failed: team-a/Deployment/<web> & more',
      metadata: { revision: 'main@sha1:0123abcd', summary: 'cluster: prod-eu' },
      summary: { newObjects: 1, changedObjects: 2, errors: 1 },
      reportingController: 'gantry-controller',
    });
  });

  it('takes the address from the Secret over spec.address, sends its token as bearer and signs with its hmacKey', () => {
    const request = buildAlertRequest(
      alert({ secretRef: { name: 's' } }),
      event,
      { address: 'https://secret.example.com/hook\n', token: 'tok-123', hmacKey: 'k3y' },
      NOW,
    );
    expect(request.address).toBe('https://secret.example.com/hook');
    expect(request.headers['authorization']).toBe('Bearer tok-123');
    expect(request.headers['x-signature']).toBe(`sha256=${createHmac('sha256', 'k3y').update(request.body).digest('hex')}`);
  });

  it('fails without any address', () => {
    expect(() => buildAlertRequest(alert({ address: undefined, secretRef: { name: 'hook' } }), event, { token: 'x' }, NOW)).toThrow(
      /no address.*Secret hook/,
    );
  });

  it('posts a Slack message: fallback text and an attachment coloured by severity, text escaped', () => {
    const request = buildAlertRequest(alert({ type: 'slack', channel: '#deploys', summary: 'prod <eu>' }), event, { token: 'xoxb-1' }, NOW);
    expect(request.headers['authorization']).toBe('Bearer xoxb-1');
    expect(request.headers['x-signature']).toBeUndefined();
    const payload = JSON.parse(request.body);
    expect(payload.channel).toBe('#deploys');
    expect(payload.text).toBe(':red_circle: KluctlDeployment team-a/shop: DeployFailed');
    expect(payload.attachments).toEqual([
      {
        color: 'danger',
        author_name: 'KluctlDeployment team-a/shop',
        title: 'DeployFailed',
        text: 'deploy failed: team-a/Deployment/&lt;web&gt; &amp; more\nprod &lt;eu&gt;',
        fields: [
          { title: 'Revision', value: 'main@sha1:0123abcd', short: true },
          { title: 'Changes', value: '1 new, 2 changed, 1 errors', short: true },
        ],
        mrkdwn_in: ['text'],
        footer: 'gantry-controller',
      },
    ]);
  });

  it('colours info events green and leaves out what is not known', () => {
    const payload = JSON.parse(
      buildAlertRequest(
        alert({ type: 'slack' }),
        { deployment: { namespace: 'n', name: 'd' }, severity: 'info', reason: 'ReconciliationSucceeded', message: 'deployed' },
        {},
        NOW,
      ).body,
    );
    expect(payload.channel).toBeUndefined();
    expect(payload.attachments[0].color).toBe('good');
    expect(payload.attachments[0].fields).toEqual([]);
    expect(payload.attachments[0].text).toBe('deployed');
  });
});
