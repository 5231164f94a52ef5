import { isUuid } from '../../../shared/ids.ts'
import {
  createWebhook as createWebhookBody,
  MAX_WEBHOOKS_PER_ORG,
  rotateWebhookSecretResult,
  webhookTestResult,
} from '../../../shared/schemas/webhooks.ts'
import { ApiError } from '../../errors.ts'
import { refusedAtRegistration } from '../../http/address-guard.ts'
import { answer } from '../../http/route-docs.ts'
import type { Params } from '../../http/router.ts'
import {
  createWebhook,
  deleteWebhook,
  deliveryDetail,
  enableWebhook,
  listWebhooks,
  rotateWebhookSecret,
} from '../../webhooks/endpoints.ts'
import { pingWebhook } from '../../webhooks/ping.ts'
import { type AppRouter, bodyOf } from './route.ts'

/** The webhook id of the path, or the 404 an unknown one gets. */
function webhookIdOf(p: Params): string {
  const id = p.webhookId ?? ''
  if (!isUuid(id)) throw new ApiError(404, 'No such webhook')
  return id.toLowerCase()
}

/**
 * Webhook management (docs/webhooks.md), owners and admins only; each route's registration
 * says what it does. Rotation and the test ping read the delivery worker's clock and window.
 */
export function webhookRoutes(app: AppRouter): void {
  const { db, config, webhooks } = app.deps

  app.org(
    'POST',
    '/webhooks',
    {
      summary: 'Register a webhook for the chosen events',
      description: 'Not idempotent: each call registers a new endpoint with a new secret.',
      access: 'owner-admin',
      body: createWebhookBody,
      answers: [
        answer.json(201, '`{ webhook, secret }`: the secret (whsec_…) is shown here only.'),
      ],
      errors: {
        400: `The url is not a public address (unless the service runs with WEBHOOK_ALLOW_PRIVATE=1), or the organisation has ${MAX_WEBHOOKS_PER_ORG} webhooks already.`,
      },
    },
    async (req, { user, org }) => {
      const input = await bodyOf(req, 'register webhook', createWebhookBody)
      if (!config.webhookAllowPrivate) {
        const refused = refusedAtRegistration(new URL(input.url).hostname)
        if (refused) {
          throw new ApiError(
            400,
            `url must point to a public address; ${refused.host} is ${refused.why}. ` +
              'A server operator can allow loopback and private receivers (tests, a receiver on the same network) by starting the service with WEBHOOK_ALLOW_PRIVATE=1',
          )
        }
      }
      const created = await createWebhook(db, {
        orgId: org.id,
        url: input.url,
        events: input.events,
        createdBy: user.id,
      })
      return { status: 201, body: created }
    },
  )

  app.org(
    'GET',
    '/webhooks',
    {
      summary: "The organisation's webhooks",
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ webhooks }`, oldest first, each with its status, disabledReason and its newest deliveries (recentDeliveries).',
        ),
      ],
    },
    async (_req, { org }) => {
      return { status: 200, body: { webhooks: await listWebhooks(db, org.id) } }
    },
  )

  app.org(
    'DELETE',
    '/webhooks/:webhookId',
    {
      summary: 'Delete a webhook',
      access: 'owner-admin',
      answers: [answer.noContent('Gone, with its pending deliveries.')],
      errors: { 404: 'No such webhook.' },
    },
    async (_req, { org, params: p }) => {
      if (!(await deleteWebhook(db, org.id, webhookIdOf(p)))) {
        throw new ApiError(404, 'No such webhook')
      }
      return { status: 204 }
    },
  )

  app.org(
    'POST',
    '/webhooks/:webhookId/enable',
    {
      summary: 'Switch a self-disabled webhook back on',
      description: 'Idempotent.',
      access: 'owner-admin',
      answers: [answer.json(200, '`{ webhook }`.')],
      errors: { 404: 'No such webhook.' },
    },
    async (_req, { org, params: p }) => {
      const webhook = await enableWebhook(db, org.id, webhookIdOf(p))
      if (!webhook) throw new ApiError(404, 'No such webhook')
      return { status: 200, body: { webhook } }
    },
  )

  app.org(
    'GET',
    '/webhooks/:webhookId/deliveries/:deliveryId',
    {
      summary: 'Every attempt of one delivery, for debugging a receiver',
      access: 'owner-admin',
      answers: [answer.json(200, '`{ delivery, attempts }`.')],
      errors: { 404: 'No such webhook, or no such delivery of it.' },
    },
    async (_req, { org, params: p }) => {
      const deliveryId = p.deliveryId ?? ''
      const found = isUuid(deliveryId)
        ? await deliveryDetail(db, org.id, webhookIdOf(p), deliveryId.toLowerCase())
        : undefined
      if (!found) throw new ApiError(404, 'No such delivery')
      return { status: 200, body: found }
    },
  )

  app.org(
    'POST',
    '/webhooks/:webhookId/rotate-secret',
    {
      summary: "Replace a webhook's signing secret, keeping the old one valid for 24 hours",
      description:
        'Not idempotent: each call makes a new secret, shown here only. Until previousSecretExpiresAt every delivery carries two signatures in each signature header (the new secret first, then the replaced one); after that only the new one. A second rotation within that window drops the older previous secret at once: the one being rotated out becomes the previous secret.',
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ secret, previousSecretExpiresAt }`: the new secret (whsec_…) and when the replaced one stops signing.',
          rotateWebhookSecretResult,
        ),
      ],
      errors: { 404: 'No such webhook.' },
    },
    async (_req, { org, params: p }) => {
      const rotated = await rotateWebhookSecret(db, org.id, webhookIdOf(p), webhooks.clock.now())
      if (!rotated) throw new ApiError(404, 'No such webhook')
      return { status: 200, body: rotated }
    },
  )

  app.org(
    'POST',
    '/webhooks/:webhookId/test',
    {
      summary: 'Send a signed test ping to a webhook now and report how it went',
      description:
        "Sends one `ping` event, signed and address-checked like every delivery, with the same reply window as deliveries (8 s) and no retries. A failed ping is still a 200 (delivered false, the receiver's status or null, the error in words); it never counts toward switching the endpoint off. It appears in the endpoint's recent deliveries as a finished `ping`. A switched-off endpoint is pinged too.",
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ delivered, status, durationMs, error }`: the outcome of the one attempt.',
          webhookTestResult,
        ),
      ],
      errors: { 404: 'No such webhook.' },
    },
    async (_req, { user, org, params: p }) => {
      const outcome = await pingWebhook(db, {
        orgId: org.id,
        webhookId: webhookIdOf(p),
        actor: { type: 'person', email: user.email, userId: user.id },
        clock: webhooks.clock,
        allowPrivate: config.webhookAllowPrivate,
        timeoutMs: webhooks.timeoutMs,
      })
      if (!outcome) throw new ApiError(404, 'No such webhook')
      return { status: 200, body: outcome }
    },
  )
}
