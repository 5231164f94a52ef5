import type { Db } from '../../../persistence/types.ts'
import {
  createWebhook as createWebhookBody,
  MAX_WEBHOOKS_PER_ORG,
  rotateWebhookSecretResult,
  webhookTestResult,
} from '../../../shared/schemas/webhooks.ts'
import { parseParams } from '../../actions/validation.ts'
import { requireMember, requireUser } from '../../auth/session.ts'
import type { Config } from '../../config.ts'
import { ApiError } from '../../errors.ts'
import { refusedAtRegistration } from '../../http/address-guard.ts'
import { readJson, sendEmpty, sendJson } from '../../http/json.ts'
import { answer } from '../../http/route-docs.ts'
import type { Params, Router } from '../../http/router.ts'
import {
  createWebhook,
  deleteWebhook,
  deliveryDetail,
  enableWebhook,
  listWebhooks,
  rotateWebhookSecret,
} from '../../webhooks/endpoints.ts'
import { pingWebhook } from '../../webhooks/ping.ts'
import type { Webhooks } from '../../webhooks/webhooks.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const MANAGERS = ['owner', 'admin'] as const

/** The webhook id of the path, or the 404 an unknown one gets. */
function webhookIdOf(p: Params): string {
  const id = p.webhookId ?? ''
  if (!UUID.test(id)) throw new ApiError(404, 'No such webhook')
  return id.toLowerCase()
}

/**
 * Webhook management in the app API (docs/design.md Contract 2), for owners and admins only:
 * a member gets 403, a person outside the organisation 404.
 *
 * - `POST /api/app/orgs/:orgId/webhooks` `{ url, events }` → 201 `{ webhook, secret }`;
 *   the secret is shown here only.
 * - `GET /api/app/orgs/:orgId/webhooks` → `{ webhooks }`, each with its status,
 *   `disabledReason` and `recentDeliveries` (newest first).
 * - `DELETE /api/app/orgs/:orgId/webhooks/:webhookId` → 204; pending deliveries are dropped.
 * - `POST /api/app/orgs/:orgId/webhooks/:webhookId/enable` → 200 `{ webhook }`: switches a
 *   self-disabled endpoint back on (idempotent).
 * - `GET /api/app/orgs/:orgId/webhooks/:webhookId/deliveries/:deliveryId` → `{ delivery,
 *   attempts }`: every attempt of one delivery, for debugging a receiver.
 * - `POST /api/app/orgs/:orgId/webhooks/:webhookId/rotate-secret` → `{ secret,
 *   previousSecretExpiresAt }`: a new secret; the old one keeps signing beside it for 24 h.
 * - `POST /api/app/orgs/:orgId/webhooks/:webhookId/test` → `{ delivered, status, durationMs,
 *   error }`: a signed `ping` sent at once, outside the outbox.
 *
 * Rotation and ping read the delivery worker's clock and reply window.
 */
export function webhookRoutes(
  router: Router,
  deps: { db: Db; config: Config; webhooks: Pick<Webhooks, 'clock' | 'timeoutMs'> },
): void {
  const { db, config, webhooks } = deps
  const manager = async (req: Parameters<typeof requireUser>[1], p: Params) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId ?? '', user, MANAGERS)
    return { user, org }
  }

  router.on(
    'POST',
    '/api/app/orgs/:orgId/webhooks',
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
    async (req, res, p) => {
      const { user, org } = await manager(req, p)
      const input = parseParams('register webhook', createWebhookBody, (await readJson(req)) ?? {})
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
      sendJson(res, 201, created)
    },
  )

  router.on(
    'GET',
    '/api/app/orgs/:orgId/webhooks',
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
    async (req, res, p) => {
      const { org } = await manager(req, p)
      sendJson(res, 200, { webhooks: await listWebhooks(db, org.id) })
    },
  )

  router.on(
    'DELETE',
    '/api/app/orgs/:orgId/webhooks/:webhookId',
    {
      summary: 'Delete a webhook',
      access: 'owner-admin',
      answers: [answer.noContent('Gone, with its pending deliveries.')],
      errors: { 404: 'No such webhook.' },
    },
    async (req, res, p) => {
      const { org } = await manager(req, p)
      if (!(await deleteWebhook(db, org.id, webhookIdOf(p)))) {
        throw new ApiError(404, 'No such webhook')
      }
      sendEmpty(res)
    },
  )

  router.on(
    'POST',
    '/api/app/orgs/:orgId/webhooks/:webhookId/enable',
    {
      summary: 'Switch a self-disabled webhook back on',
      description: 'Idempotent.',
      access: 'owner-admin',
      answers: [answer.json(200, '`{ webhook }`.')],
      errors: { 404: 'No such webhook.' },
    },
    async (req, res, p) => {
      const { org } = await manager(req, p)
      const webhook = await enableWebhook(db, org.id, webhookIdOf(p))
      if (!webhook) throw new ApiError(404, 'No such webhook')
      sendJson(res, 200, { webhook })
    },
  )

  router.on(
    'GET',
    '/api/app/orgs/:orgId/webhooks/:webhookId/deliveries/:deliveryId',
    {
      summary: 'Every attempt of one delivery, for debugging a receiver',
      access: 'owner-admin',
      answers: [answer.json(200, '`{ delivery, attempts }`.')],
      errors: { 404: 'No such webhook, or no such delivery of it.' },
    },
    async (req, res, p) => {
      const { org } = await manager(req, p)
      const deliveryId = p.deliveryId ?? ''
      const found = UUID.test(deliveryId)
        ? await deliveryDetail(db, org.id, webhookIdOf(p), deliveryId.toLowerCase())
        : undefined
      if (!found) throw new ApiError(404, 'No such delivery')
      sendJson(res, 200, found)
    },
  )

  router.on(
    'POST',
    '/api/app/orgs/:orgId/webhooks/:webhookId/rotate-secret',
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
    async (req, res, p) => {
      const { org } = await manager(req, p)
      const rotated = await rotateWebhookSecret(db, org.id, webhookIdOf(p), webhooks.clock.now())
      if (!rotated) throw new ApiError(404, 'No such webhook')
      sendJson(res, 200, rotated)
    },
  )

  router.on(
    'POST',
    '/api/app/orgs/:orgId/webhooks/:webhookId/test',
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
    async (req, res, p) => {
      const { user, org } = await manager(req, p)
      const outcome = await pingWebhook(db, {
        orgId: org.id,
        webhookId: webhookIdOf(p),
        actor: { type: 'person', email: user.email, userId: user.id },
        clock: webhooks.clock,
        allowPrivate: config.webhookAllowPrivate,
        timeoutMs: webhooks.timeoutMs,
      })
      if (!outcome) throw new ApiError(404, 'No such webhook')
      sendJson(res, 200, outcome)
    },
  )
}
