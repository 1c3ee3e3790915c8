/**
 * The Alert resource (gitops.gantry.dev/v1beta1): where to send notifications about KluctlDeployments, and which.
 *
 * It is Flux's notification-controller Provider (type, address, channel, secretRef) and Alert (eventSeverity,
 * eventSources, summary, suspend) collapsed into one resource — the pair the Flux Kluctl controller used for
 * alerting, with KluctlDeployment added to the Alert's event source kinds. One Alert sends every matching event
 * to one address; several Alerts may watch the same deployment. This schema is the single source of the CRD's
 * openAPIV3Schema, of the controller's validation and of the TypeScript types.
 */
import { Type, type Static } from 'typebox';
import type { NamespacedObjectMeta } from '../kube/object.ts';
import { API_VERSION, Condition, GROUP, KIND as KLUCTL_DEPLOYMENT_KIND, VERSION } from './kluctl-deployment.ts';

export { API_VERSION, GROUP, VERSION };
export const KIND = 'Alert';
export const PLURAL = 'alerts';

/**
 * Keys read from the Secret named by spec.secretRef (each optional), as Flux's Provider reads them:
 * - `address`: the URL to post to, instead of spec.address (for URLs that are themselves secret, such as Slack
 *   incoming webhooks).
 * - `token`: sent as `Authorization: Bearer <token>` (a Slack bot token for chat.postMessage, or any bearer token a
 *   generic receiver checks).
 * - `hmacKey` (generic only): the body is signed with HMAC-SHA256 under this key and the signature sent as
 *   `X-Signature: sha256=<hex>`, the header Flux's generic-hmac provider sends.
 */
export const SECRET_KEYS = { address: 'address', token: 'token', hmacKey: 'hmacKey' } as const;

/** The header carrying the HMAC signature of a generic payload. */
export const SIGNATURE_HEADER = 'X-Signature';

export const AlertEventSourceSchema = Type.Object(
  {
    kind: Type.Literal(KLUCTL_DEPLOYMENT_KIND, { description: 'Kind of the watched resources; only KluctlDeployment.' }),
    name: Type.String({
      minLength: 1,
      maxLength: 253,
      description: "Name of the watched KluctlDeployment, or '*' for every one in the namespace.",
    }),
    namespace: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, description: "Namespace of the watched KluctlDeployments; the Alert's own when unset." }),
    ),
    matchLabels: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: "With name '*': only KluctlDeployments carrying all of these labels." }),
    ),
  },
  { description: 'KluctlDeployments whose events this Alert sends.' },
);
export type AlertEventSource = Static<typeof AlertEventSourceSchema>;

export const AlertSpecSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('generic'), Type.Literal('slack')], {
      description:
        "Payload format: 'generic' posts the event as JSON; 'slack' posts a Slack message (incoming webhook or chat.postMessage).",
    }),
    address: Type.Optional(
      Type.String({
        format: 'uri',
        description: "URL the payloads are posted to; the 'address' key of the secretRef Secret overrides it.",
      }),
    ),
    channel: Type.Optional(
      Type.String({
        description: 'Slack channel to post to (needed with chat.postMessage and a bot token; an incoming webhook has its own).',
      }),
    ),
    summary: Type.Optional(Type.String({ description: 'Text added to every message, e.g. the cluster or environment it comes from.' })),
    secretRef: Type.Optional(
      Type.Object(
        { name: Type.String({ description: "Name of the Secret (in the Alert's namespace)." }) },
        {
          description:
            "Secret with optional keys 'address' (overrides spec.address), 'token' (sent as 'Authorization: Bearer <token>') and, for generic, 'hmacKey' (the body's HMAC-SHA256 is sent as 'X-Signature: sha256=<hex>').",
        },
      ),
    ),
    eventSeverity: Type.Optional(
      Type.Union([Type.Literal('info'), Type.Literal('error')], {
        default: 'info',
        description: "'info' sends when a deployment changed objects and when it failed; 'error' only when it failed.",
      }),
    ),
    eventSources: Type.Array(AlertEventSourceSchema, { minItems: 1, description: 'The KluctlDeployments to watch.' }),
    suspend: Type.Optional(Type.Boolean({ default: false, description: 'Send nothing while true; events in between are not sent later.' })),
  },
  {
    description: 'Where to send notifications, in which format, and for which KluctlDeployments.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.address) || has(self.secretRef)',
        message: "an address is needed: set spec.address or a secretRef whose Secret has the key 'address'",
      },
    ],
  },
);
export type AlertSpec = Static<typeof AlertSpecSchema>;

export const AlertStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ description: 'The metadata.generation the conditions describe.' })),
  conditions: Type.Optional(
    Type.Array(Condition, { description: "Ready: whether the Alert's address and Secret are usable, and why not." }),
  ),
});
export type AlertStatus = Static<typeof AlertStatusSchema>;

export interface Alert {
  apiVersion: string;
  kind: string;
  metadata: NamespacedObjectMeta;
  spec: AlertSpec;
  status?: AlertStatus;
}
