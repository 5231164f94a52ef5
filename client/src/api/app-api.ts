import { z } from 'zod/mini'
import { COLUMN_ROLES, MEMBER_ROLES } from '../../../shared/constants.ts'
import { api, apiVoid } from './http.ts'

/** Every app-API route the web app calls (docs/design.md Contract 2 plus client-routes), with the answer's shape. */

const user = z.looseObject({ id: z.string(), email: z.string(), name: z.string() })
export type User = z.infer<typeof user>

const role = z.enum(MEMBER_ROLES)
export type MemberRole = z.infer<typeof role>

const organization = z.looseObject({ id: z.string(), name: z.string(), role })
export type Organization = z.infer<typeof organization>

export const meSchema = z.looseObject({ user, organizations: z.array(organization) })
const me = meSchema
export type Me = z.infer<typeof me>

const member = z.looseObject({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role,
  joinedAt: z.optional(z.string()),
})
export type Member = z.infer<typeof member>

const pendingInvite = z.looseObject({
  email: z.string(),
  role: z.string(),
  createdAt: z.optional(z.string()),
  expiresAt: z.optional(z.string()),
})
export type PendingInvite = z.infer<typeof pendingInvite>

const apiKey = z.looseObject({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdAt: z.string(),
  createdBy: z.optional(z.string()),
  lastUsedAt: z.optional(z.nullable(z.string())),
})
export type ApiKey = z.infer<typeof apiKey>

/** An app connected to /mcp by OAuth sign-in: a grant, acting through its own robot. */
const connectedApp = z.looseObject({
  id: z.string(),
  clientName: z.string(),
  redirectHost: z.string(),
  grantedByEmail: z.string(),
  robotEmail: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.nullable(z.string()),
})
export type ConnectedApp = z.infer<typeof connectedApp>

const project = z.looseObject({
  id: z.string(),
  name: z.string(),
  color: z.string(),
  createdAt: z.string(),
})

const delivery = z.looseObject({
  id: z.string(),
  eventType: z.string(),
  status: z.string(),
  attempts: z.number(),
  createdAt: z.string(),
  lastAttemptAt: z.nullable(z.string()),
  nextAttemptAt: z.nullable(z.string()),
  lastStatusCode: z.nullable(z.number()),
  lastError: z.nullable(z.string()),
})
export type Delivery = z.infer<typeof delivery>

const webhook = z.looseObject({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.optional(z.nullable(z.string())),
  disabledAt: z.optional(z.nullable(z.string())),
  createdAt: z.optional(z.string()),
  consecutiveFailures: z.optional(z.number()),
  previousSecretExpiresAt: z.optional(z.nullable(z.string())),
  recentDeliveries: z.optional(z.array(delivery)),
})
export type Webhook = z.infer<typeof webhook>

const rotatedSecret = z.looseObject({ secret: z.string(), previousSecretExpiresAt: z.string() })

const pingOutcome = z.looseObject({
  delivered: z.boolean(),
  status: z.nullable(z.number()),
  durationMs: z.number(),
  error: z.nullable(z.string()),
})
export type PingOutcome = z.infer<typeof pingOutcome>

const mindMap = z.looseObject({ id: z.string(), title: z.string(), updatedAt: z.string() })
export type MindMapSummary = z.infer<typeof mindMap>

const signedLink = z.looseObject({ url: z.string(), expiresAt: z.string() })
export type SignedLink = z.infer<typeof signedLink>

const column = z.looseObject({
  id: z.string(),
  title: z.string(),
  role: z.nullable(z.enum(COLUMN_ROLES)),
  onFire: z.boolean(),
})

const invitePreview = z.looseObject({
  organization: z.looseObject({ name: z.string() }),
  email: z.string(),
  role: z.string(),
  expiresAt: z.string(),
})
export type InvitePreview = z.infer<typeof invitePreview>

const empty = z.unknown()

/** An archived card as the Archived view lists it (the get_task task shape, in part). */
const archivedTask = z.looseObject({
  id: z.string(),
  title: z.string(),
  columnId: z.string(),
  projectName: z.nullable(z.string()),
  archivedAt: z.nullable(z.string()),
  commentCount: z.number(),
  imageCount: z.number(),
  claim: z.nullable(z.looseObject({ holder: z.string(), isLive: z.boolean() })),
})
export type ArchivedTask = z.infer<typeof archivedTask>

/** One event of a card's history (GET .../cards/:taskId/history). */
const historyEvent = z.looseObject({
  id: z.nullable(z.string()),
  kind: z.string(),
  at: z.string(),
  actor: z.looseObject({
    kind: z.string(),
    name: z.optional(z.nullable(z.string())),
    email: z.optional(z.string()),
  }),
  detail: z.record(z.string(), z.unknown()),
})
export type HistoryEvent = z.infer<typeof historyEvent>

/** A search hit (search_tasks' summary form, with archivedAt and where it matched). */
const searchHit = z.looseObject({
  id: z.string(),
  title: z.string(),
  columnId: z.string(),
  archivedAt: z.nullable(z.string()),
  match: z.looseObject({
    field: z.string(),
    snippet: z.string(),
    commentId: z.optional(z.string()),
  }),
})
export type SearchHit = z.infer<typeof searchHit>

/** A card as the restore answers it (the get_task task shape, in part). */
const restoredTask = z.looseObject({ id: z.string(), columnId: z.string(), title: z.string() })
const org = (orgId: string) => `/orgs/${encodeURIComponent(orgId)}`

export const appApi = {
  me: () => api('GET', '/me', me),
  login: (email: string, password: string) => api('POST', '/login', me, { email, password }),
  signup: (input: { email: string; password: string; name: string; organizationName: string }) =>
    api('POST', '/signup', z.looseObject({ user, organization }), input),
  logout: () => apiVoid('POST', '/logout'),

  invitePreview: (token: string) =>
    api('GET', `/invites/${encodeURIComponent(token)}`, invitePreview),
  acceptInvite: (token: string) =>
    api(
      'POST',
      `/invites/${encodeURIComponent(token)}/accept`,
      z.looseObject({ organization: z.looseObject({ id: z.string(), name: z.string() }), role }),
    ),

  members: (orgId: string) =>
    api(
      'GET',
      `${org(orgId)}/members`,
      z.looseObject({ members: z.array(member), invites: z.array(pendingInvite) }),
    ),
  invite: (orgId: string, email: string, inviteRole: 'admin' | 'member') =>
    api(
      'POST',
      `${org(orgId)}/invites`,
      z.looseObject({
        invite: z.looseObject({ token: z.string(), email: z.string(), role: z.string() }),
      }),
      { email, role: inviteRole },
    ),
  setMemberRole: (orgId: string, userId: string, newRole: MemberRole) =>
    api('PATCH', `${org(orgId)}/members/${userId}`, z.looseObject({ member }), { role: newRole }),
  removeMember: (orgId: string, userId: string) =>
    apiVoid('DELETE', `${org(orgId)}/members/${userId}`),

  apiKeys: (orgId: string) =>
    api('GET', `${org(orgId)}/api-keys`, z.looseObject({ apiKeys: z.array(apiKey) })),
  createApiKey: (orgId: string, name: string) =>
    api('POST', `${org(orgId)}/api-keys`, z.looseObject({ apiKey, key: z.string() }), { name }),
  revokeApiKey: (orgId: string, keyId: string) =>
    apiVoid('DELETE', `${org(orgId)}/api-keys/${keyId}`),
  connectedApps: (orgId: string) =>
    api('GET', `${org(orgId)}/connected-apps`, z.looseObject({ apps: z.array(connectedApp) })),
  revokeConnectedApp: (orgId: string, grantId: string) =>
    apiVoid('DELETE', `${org(orgId)}/connected-apps/${grantId}`),

  projects: (orgId: string) =>
    api('GET', `${org(orgId)}/projects`, z.looseObject({ projects: z.array(project) })),
  createProject: (orgId: string, name: string, color?: string) =>
    api('POST', `${org(orgId)}/projects`, z.looseObject({ project }), { name, color }),

  /** An ended generation of a live document (a re-base): what carries unsent edits across. */
  endedGeneration: (orgId: string, document: string, generation: number) =>
    api(
      'GET',
      `${org(orgId)}/documents/generations/${generation}?document=${encodeURIComponent(document)}`,
      z.looseObject({
        stateVector: z.string(),
        base: z.nullable(z.record(z.string(), z.unknown())),
      }),
    ),
  syncToken: (orgId: string) =>
    api(
      'POST',
      `${org(orgId)}/sync-token`,
      z.looseObject({ token: z.string(), expiresAt: z.string() }),
    ),

  forceRelease: (orgId: string, taskId: string) =>
    api(
      'POST',
      `${org(orgId)}/tasks/${taskId}/force-release`,
      z.looseObject({ released: z.boolean() }),
    ),
  deleteTask: (orgId: string, taskId: string) => apiVoid('DELETE', `${org(orgId)}/tasks/${taskId}`),
  archivedTasks: (orgId: string, page: { limit?: number; before?: string | null } = {}) => {
    const query = new URLSearchParams()
    if (page.limit) query.set('limit', String(page.limit))
    if (page.before) query.set('before', page.before)
    const q = query.size > 0 ? `?${query}` : ''
    return api(
      'GET',
      `${org(orgId)}/archived-tasks${q}`,
      z.looseObject({ tasks: z.array(archivedTask), nextBefore: z.nullable(z.string()) }),
    )
  },
  search: (orgId: string, q: string, archived: boolean, limit = 12) =>
    api(
      'GET',
      `${org(orgId)}/search?q=${encodeURIComponent(q)}&archived=${archived}&limit=${limit}`,
      z.looseObject({ tasks: z.array(searchHit), nextCursor: z.nullable(z.string()) }),
    ),
  cardHistory: (orgId: string, taskId: string, cursor?: string | null, limit = 30) =>
    api(
      'GET',
      `${org(orgId)}/cards/${taskId}/history?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      z.looseObject({ events: z.array(historyEvent), nextCursor: z.nullable(z.string()) }),
    ),
  archivedTaskOf: (orgId: string, taskId: string) =>
    api('GET', `${org(orgId)}/archived-tasks/${taskId}`, z.looseObject({ task: archivedTask })),
  restoreTask: (orgId: string, taskId: string) =>
    api('POST', `${org(orgId)}/tasks/${taskId}/restore`, z.looseObject({ task: restoredTask })),
  removeTaskProject: (orgId: string, taskId: string) =>
    api('DELETE', `${org(orgId)}/tasks/${taskId}/project`, empty),
  patchColumn: (
    orgId: string,
    columnId: string,
    patch: { role?: (typeof COLUMN_ROLES)[number] | null; onFire?: boolean },
  ) => api('PATCH', `${org(orgId)}/columns/${columnId}`, z.looseObject({ column }), patch),
  deleteColumn: (orgId: string, columnId: string, destinationColumnId?: string) =>
    api(
      'DELETE',
      `${org(orgId)}/columns/${columnId}${
        destinationColumnId ? `?destinationColumnId=${destinationColumnId}` : ''
      }`,
      z.looseObject({ movedCount: z.number() }),
    ),
  deleteComment: (orgId: string, commentId: string) =>
    apiVoid('DELETE', `${org(orgId)}/comments/${commentId}`),
  attachmentLink: (orgId: string, attachmentId: string) =>
    api('GET', `${org(orgId)}/attachments/${attachmentId}/link`, signedLink),
  deleteAttachment: (orgId: string, attachmentId: string) =>
    apiVoid('DELETE', `${org(orgId)}/attachments/${attachmentId}`),

  webhooks: (orgId: string) =>
    api('GET', `${org(orgId)}/webhooks`, z.looseObject({ webhooks: z.array(webhook) })),
  createWebhook: (orgId: string, url: string, events: string[]) =>
    api('POST', `${org(orgId)}/webhooks`, z.looseObject({ webhook, secret: z.string() }), {
      url,
      events,
    }),
  deleteWebhook: (orgId: string, webhookId: string) =>
    apiVoid('DELETE', `${org(orgId)}/webhooks/${webhookId}`),
  enableWebhook: (orgId: string, webhookId: string) =>
    api('POST', `${org(orgId)}/webhooks/${webhookId}/enable`, empty),
  rotateWebhookSecret: (orgId: string, webhookId: string) =>
    api('POST', `${org(orgId)}/webhooks/${webhookId}/rotate-secret`, rotatedSecret),
  testWebhook: (orgId: string, webhookId: string) =>
    api('POST', `${org(orgId)}/webhooks/${webhookId}/test`, pingOutcome),

  maps: (orgId: string) =>
    api('GET', `${org(orgId)}/maps`, z.looseObject({ maps: z.array(mindMap) })),
  createMap: (orgId: string, title: string) =>
    api('POST', `${org(orgId)}/maps`, z.looseObject({ map: mindMap }), { title }),
  renameMap: (orgId: string, mapId: string, title: string) =>
    api('PATCH', `${org(orgId)}/maps/${mapId}`, z.looseObject({ map: mindMap }), { title }),
  deleteMap: (orgId: string, mapId: string) => apiVoid('DELETE', `${org(orgId)}/maps/${mapId}`),
  setNodeImage: (orgId: string, mapId: string, nodeId: string, imageBase64: string) =>
    api(
      'POST',
      `${org(orgId)}/maps/${mapId}/nodes/${nodeId}/image`,
      z.looseObject({ node: z.looseObject({ imageUrl: z.optional(z.string()) }) }),
      { imageBase64 },
    ),
  clearNodeImage: (orgId: string, mapId: string, nodeId: string) =>
    api('DELETE', `${org(orgId)}/maps/${mapId}/nodes/${nodeId}/image`, empty),
} as const
