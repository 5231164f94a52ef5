import { isUuid } from '../../../shared/ids.ts'
import * as body from '../../../shared/schemas/app.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/api-keys.ts'
import { ApiError } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, bodyOf } from './route.ts'

/** API keys for agents (owners and admins): made, listed without secrets, revoked at once. */
export function apiKeyRoutes(app: AppRouter): void {
  const { db, live, config } = app.deps

  app.org(
    'POST',
    '/api-keys',
    {
      summary: 'Make an API key for agents',
      access: 'owner-admin',
      body: body.createApiKey,
      answers: [
        answer.json(
          201,
          '`{ apiKey: { id, name, prefix, createdAt }, key }`: the key is shown here only.',
        ),
      ],
    },
    async (req, { user, org }) => {
      const input = await bodyOf(req, 'create API key', body.createApiKey)
      const created = await createApiKey(db, {
        orgId: org.id,
        name: input.name,
        createdBy: user.id,
        publicUrl: config.publicUrl,
      })
      return { status: 201, body: created }
    },
  )

  app.org(
    'GET',
    '/api-keys',
    {
      summary: "The organisation's API keys, without secrets",
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ apiKeys: [{ id, name, prefix, createdAt, createdBy, lastUsedAt }] }`: unrevoked keys; lastUsedAt to the minute.',
        ),
      ],
    },
    async (_req, { org }) => {
      return { status: 200, body: { apiKeys: await listApiKeys(db, org.id) } }
    },
  )

  app.org(
    'DELETE',
    '/api-keys/:keyId',
    {
      summary: 'Revoke an API key',
      access: 'owner-admin',
      answers: [
        answer.noContent('The key stops working at once; its live connections close everywhere.'),
      ],
      errors: { 404: 'No such API key.' },
    },
    async (_req, { org, params: p }) => {
      const keyId = (p.keyId as string).toLowerCase()
      if (!isUuid(keyId) || !(await revokeApiKey(db, org.id, keyId))) {
        throw new ApiError(404, 'No such API key')
      }
      live.closeConnections({ keyId })
      return { status: 204 }
    },
  )
}
