import type { IncomingMessage } from 'node:http'
import { z } from 'zod'
import type { Db } from '../../persistence/db.ts'
import { actions } from '../../shared/actions.ts'
import { mapDocName } from '../../shared/board-doc.ts'
import { MEMBER_ROLES, type MemberRole } from '../../shared/constants.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import { oneOf } from '../../shared/schemas/common.ts'
import type { OrgMembership, User } from '../accounts.ts'
import { delete_comment } from '../actions/comments.ts'
import {
  create_map,
  delete_map,
  indexItems,
  list_maps,
  mapIsLive,
  rename_map,
} from '../actions/maps.ts'
import { clear_node_image, set_node_image } from '../actions/nodes.ts'
import type { Clock } from '../agent/context.ts'
import { perform } from '../agent/handlers.ts'
import { parseParams } from '../agent/validation.ts'
import { ApiError, forbidden, notFound } from '../api-error.ts'
import { sha256Hex } from '../auth/crypto.ts'
import type { Config } from '../config.ts'
import { readJson, sendEmpty, sendJson } from '../http/json.ts'
import type { Params, Router } from '../http/router.ts'
import type { LiveDocs } from '../live/live-docs.ts'
import { pathId } from './path-id.ts'
import { personContext } from './person-context.ts'
import { requireMember, requireUser } from './session.ts'

export interface ClientRouteDeps {
  db: Db
  live: LiveDocs
  config: Config
  clock?: Clock
}

/** `PATCH /orgs/:orgId/members/:userId` body. */
const memberRole = z.strictObject({ role: oneOf('role', MEMBER_ROLES) })

/** Closes a person's live connections to an organisation's documents (they left it). */
function disconnect(live: LiveDocs, orgId: string, userId: string): void {
  live.closeConnections({ orgId, userId })
}

/**
 * The app-API routes the web app needs beyond docs/design.md Contract 2's table: invite
 * previews, members' roles and removal, deleting a column, deleting one's own comment,
 * and mind maps and node images as a person. Members of the organisation only (404 for
 * anyone else); managing members needs owner or admin (403 otherwise).
 */
export function clientRoutes(router: Router, deps: ClientRouteDeps): void {
  const { db, live } = deps

  type Handler = (
    req: IncomingMessage,
    ctx: { user: User; org: OrgMembership; params: Params },
  ) => Promise<{ status: number; body?: unknown }>

  const on = (method: string, path: string, handler: Handler, roles?: readonly MemberRole[]) =>
    router.on(method, `/api/app/orgs/:orgId${path}`, async (req, res, params) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, params.orgId ?? '', user, roles)
      const out = await handler(req, { user, org, params })
      if (out.body === undefined) sendEmpty(res, out.status)
      else sendJson(res, out.status, out.body)
    })

  const bodyOf = async <S extends z.ZodType>(req: IncomingMessage, what: string, schema: S) =>
    parseParams(what, schema, (await readJson(req)) ?? {})

  /**
   * `GET /api/app/invites/:token`: whose invite this is, so the page can say what joining
   * means before anyone signs in. The token is the secret; nothing else is revealed.
   */
  router.on('GET', '/api/app/invites/:token', async (_req, res, p) => {
    const [row] = await db.query<{
      org_id: string
      org_name: string
      email: string
      role: string
      expires_at: Date
      accepted_at: Date | null
    }>(
      `select i.org_id, o.name as org_name, i.email, i.role, i.expires_at, i.accepted_at
         from invites i join organizations o on o.id = i.org_id where i.token_hash = $1`,
      [sha256Hex(p.token ?? '')],
    )
    if (!row) throw notFound('No such invite')
    if (row.accepted_at) throw new ApiError(409, 'This invite was already accepted')
    if (row.expires_at.getTime() < Date.now()) {
      throw new ApiError(410, 'This invite has expired; ask for a new one')
    }
    sendJson(res, 200, {
      organization: { id: row.org_id, name: row.org_name },
      email: row.email,
      role: row.role,
      expiresAt: row.expires_at.toISOString(),
    })
  })

  /**
   * Changes a member's role. Owners may make and unmake owners; admins change admins and
   * members only. The last owner cannot be demoted, so an organisation always has one.
   */
  on(
    'PATCH',
    '/members/:userId',
    async (req, { org, params }) => {
      const userId = pathId(params, 'userId')
      const { role } = await bodyOf(req, 'change member role', memberRole)
      const member = await db.transaction(async (tx) => {
        const rows = await tx.query<{ user_id: string; role: MemberRole }>(
          'select user_id, role from memberships where org_id = $1 order by user_id for update',
          [org.id],
        )
        const target = rows.find((r) => r.user_id === userId)
        if (!target) throw notFound(`No member with userId ${userId} in this organisation`)
        if (org.role !== 'owner' && (target.role === 'owner' || role === 'owner')) {
          throw forbidden('Only an owner can make or unmake owners')
        }
        if (target.role === 'owner' && role !== 'owner') {
          if (rows.filter((r) => r.role === 'owner').length === 1) {
            throw new ApiError(
              409,
              'The last owner cannot be demoted; make someone else owner first',
            )
          }
        }
        const [updated] = await tx.query<{ id: string; email: string; name: string }>(
          `update memberships m set role = $3 from users u
            where m.org_id = $1 and m.user_id = $2 and u.id = m.user_id
            returning u.id, u.email, u.name`,
          [org.id, userId, role],
        )
        if (!updated) throw notFound(`No member with userId ${userId} in this organisation`)
        return { ...updated, role }
      })
      return { status: 200, body: { member } }
    },
    ['owner', 'admin'],
  )

  /**
   * Removes a member, or lets a person leave. Owners and admins remove others (admins not
   * owners); the last owner cannot go. The person's live connections are closed at once.
   */
  on('DELETE', '/members/:userId', async (_req, { user, org, params }) => {
    const userId = pathId(params, 'userId')
    const self = userId === user.id
    if (!self && org.role === 'member') {
      throw forbidden(`Removing someone needs the role owner or admin; you are ${org.role}`)
    }
    await db.transaction(async (tx) => {
      const rows = await tx.query<{ user_id: string; role: MemberRole }>(
        'select user_id, role from memberships where org_id = $1 order by user_id for update',
        [org.id],
      )
      const target = rows.find((r) => r.user_id === userId)
      if (!target) throw notFound(`No member with userId ${userId} in this organisation`)
      if (!self && target.role === 'owner' && org.role !== 'owner') {
        throw forbidden('Only an owner can remove an owner')
      }
      if (target.role === 'owner' && rows.filter((r) => r.role === 'owner').length === 1) {
        throw new ApiError(409, 'The last owner cannot leave; make someone else owner first')
      }
      await tx.query('delete from memberships where org_id = $1 and user_id = $2', [org.id, userId])
    })
    disconnect(live, org.id, userId)
    return { status: 204 }
  })

  /**
   * Deletes a column as delete_column does (the same handler): cards, archived ones
   * included, move to `destinationColumnId` (query parameter) in their order; 409 while a
   * card in it is actively worked.
   */
  on('DELETE', '/columns/:columnId', async (req, { user, org, params }) => {
    const query = new URL(req.url ?? '/', 'http://localhost').searchParams
    const input = parseParams('delete column', actions.delete_column.input, {
      columnId: params.columnId,
      ...(query.get('destinationColumnId')
        ? { destinationColumnId: query.get('destinationColumnId') }
        : {}),
    })
    const result = await perform(personContext(deps, user, org), 'delete_column', input)
    return { status: 200, body: result }
  })

  /**
   * Deletes one's own comment, permanently. People write comments as Yjs edits but never
   * remove anything from the document themselves (docs/design.md), so removal comes here. A
   * comment by someone else (an agent, another person) is 403.
   */
  on('DELETE', '/comments/:commentId', async (_req, { user, org, params }) => {
    const commentId = pathId(params, 'commentId')
    const ctx = personContext(deps, user, org)
    try {
      await delete_comment(ctx, { commentId })
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error
      // A comment written a moment ago may not be indexed yet: store people's edits, look again.
      await live.flushPeople(org.id)
      await delete_comment(ctx, { commentId })
    }
    return { status: 204 }
  })

  /** The organisation's mind maps, most recently changed first (list_maps). */
  on('GET', '/maps', async (_req, { user, org }) => ({
    status: 200,
    body: await list_maps(personContext(deps, user, org)),
  }))

  /** A new, empty map (create_map). */
  on('POST', '/maps', async (req, { user, org }) => {
    const input = await bodyOf(req, 'create map', actions.create_map.input)
    return { status: 201, body: await create_map(personContext(deps, user, org), input) }
  })

  /** Renames a map: the list and the document's title together (rename_map). */
  on('PATCH', '/maps/:mapId', async (req, { user, org, params }) => {
    const body = (await readJson(req)) ?? {}
    const input = parseParams('rename map', actions.rename_map.input, {
      ...(typeof body === 'object' ? body : {}),
      mapId: params.mapId,
    })
    return { status: 200, body: await rename_map(personContext(deps, user, org), input) }
  })

  /** Deletes a map and everything on it, permanently (delete_map). */
  on('DELETE', '/maps/:mapId', async (_req, { user, org, params }) => {
    const input = parseParams('delete map', actions.delete_map.input, { mapId: params.mapId })
    await delete_map(personContext(deps, user, org), input)
    return { status: 204 }
  })

  /**
   * A node exists for the image actions once it is indexed; a node a person drew reaches
   * the document without an action, so it is indexed here, after checking it is on the map.
   */
  const nodeOnMap = async (orgId: string, mapId: string, nodeId: string) => {
    if (!(await mapIsLive(db, orgId, mapId))) {
      throw notFound(`No map with mapId ${mapId} in this organisation`)
    }
    const present = await live.read(mapDocName(orgId, mapId), (doc) =>
      mapDocMaps(doc).nodes.has(nodeId),
    )
    if (!present) throw notFound(`No node with nodeId ${nodeId} on map ${mapId}`)
    await db.transaction((tx) => indexItems(tx, orgId, mapId, 'node', [nodeId]))
  }

  /** Gives a node an image (set_node_image): proved from its bytes, published permanently. */
  on('POST', '/maps/:mapId/nodes/:nodeId/image', async (req, { user, org, params }) => {
    const mapId = pathId(params, 'mapId')
    const nodeId = pathId(params, 'nodeId')
    const body = (await readJson(req)) ?? {}
    const input = parseParams('set node image', actions.set_node_image.input, {
      ...(typeof body === 'object' ? body : {}),
      nodeId,
    })
    await nodeOnMap(org.id, mapId, nodeId)
    return { status: 200, body: await set_node_image(personContext(deps, user, org), input) }
  })

  /** Takes a node's image off (clear_node_image); the published file stays. */
  on('DELETE', '/maps/:mapId/nodes/:nodeId/image', async (_req, { user, org, params }) => {
    const mapId = pathId(params, 'mapId')
    const nodeId = pathId(params, 'nodeId')
    const input = parseParams('clear node image', actions.clear_node_image.input, { nodeId })
    await nodeOnMap(org.id, mapId, nodeId)
    return { status: 200, body: await clear_node_image(personContext(deps, user, org), input) }
  })
}
