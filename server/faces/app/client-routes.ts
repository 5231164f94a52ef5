import type { IncomingMessage, ServerResponse } from 'node:http'
import { z } from 'zod'
import type { Db } from '../../../persistence/types.ts'
import { actions } from '../../../shared/actions.ts'
import { mapDocName } from '../../../shared/board-doc.ts'
import { MEMBER_ROLES, type MemberRole } from '../../../shared/constants.ts'
import { mapDocMaps } from '../../../shared/map-doc.ts'
import { oneOf } from '../../../shared/schemas/common.ts'
import { delete_comment } from '../../actions/comments.ts'
import { perform } from '../../actions/handlers.ts'
import { EXPORT_TYPES, exportBytes, readMapContent } from '../../actions/map-export.ts'
import { layout_map } from '../../actions/map-layout.ts'
import {
  create_map,
  delete_map,
  indexItems,
  list_maps,
  mapIsLive,
  rename_map,
} from '../../actions/maps.ts'
import { clear_node_image, set_node_image } from '../../actions/nodes.ts'
import { parseParams } from '../../actions/validation.ts'
import type { OrgMembership, User } from '../../auth/accounts.ts'
import { sha256Hex } from '../../auth/crypto.ts'
import { requireMember, requireUser } from '../../auth/session.ts'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { ApiError, forbidden, notFound } from '../../errors.ts'
import { readJson, sendEmpty, sendJson } from '../../http/json.ts'
import { answer, type RouteDoc } from '../../http/route-docs.ts'
import type { Params, Router } from '../../http/router.ts'
import type { LiveDocs } from '../../live/live-docs.ts'
import { pathId } from './path-id.ts'
import { personContext } from './person-context.ts'

export interface ClientRouteDeps {
  db: Db
  live: LiveDocs
  config: Config
  clock?: Clock
}

const MANAGERS = ['owner', 'admin'] as const

/** `PATCH /orgs/:orgId/members/:userId` body. */
const memberRole = z.strictObject({ role: oneOf('role', MEMBER_ROLES) })

/** Bytes the browser saves as a file. */
interface DownloadFile {
  bytes: Buffer
  mimeType: string
  /** The file's name as people see it (any characters); made safe for the header here. */
  filename: string
}

/**
 * `Content-Disposition: attachment` with the name twice: `filename` in plain ASCII (quotes,
 * backslashes, slashes and controls out, anything else non-ASCII as `_`) for every browser,
 * and `filename*` (RFC 6266) with the whole name in UTF-8 for those that read it.
 */
export function attachmentDisposition(filename: string): string {
  const ascii = filename
    .replace(/[\p{Cc}"\\/]/gu, '')
    .replace(/[^\u0020-\u007e]/g, '_')
    .trim()
  const utf8 = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `attachment; filename="${ascii || 'download'}"; filename*=UTF-8''${utf8}`
}

function sendDownload(res: ServerResponse, file: DownloadFile): void {
  res.writeHead(200, {
    'content-type': file.mimeType.startsWith('text/')
      ? `${file.mimeType}; charset=utf-8`
      : file.mimeType,
    'content-length': file.bytes.length,
    'content-disposition': attachmentDisposition(file.filename),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  })
  res.end(file.bytes)
}

/** A map's title as a file name: what a file system refuses out, at most 100 characters. */
function mapFileName(title: string, extension: string): string {
  const base = title
    .replace(/[\p{Cc}<>:"/\\|?*]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
  const short = Array.from(base).slice(0, 100).join('').trim()
  return `${short || 'map'}.${extension}`
}

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
  ) => Promise<{ status: number; body?: unknown; file?: DownloadFile }>

  /** Who may call it is the declared access, so the document and the check cannot differ. */
  const on = (
    method: string,
    path: string,
    doc: RouteDoc & { access: 'member' | 'owner-admin' },
    handler: Handler,
  ) =>
    router.on(method, `/api/app/orgs/:orgId${path}`, doc, async (req, res, params) => {
      const user = await requireUser(db, req)
      const org = await requireMember(
        db,
        params.orgId ?? '',
        user,
        doc.access === 'owner-admin' ? MANAGERS : undefined,
      )
      const out = await handler(req, { user, org, params })
      if (out.file) sendDownload(res, out.file)
      else if (out.body === undefined) sendEmpty(res, out.status)
      else sendJson(res, out.status, out.body)
    })

  const bodyOf = async <S extends z.ZodType>(req: IncomingMessage, what: string, schema: S) =>
    parseParams(what, schema, (await readJson(req)) ?? {})

  /**
   * `GET /api/app/invites/:token`: whose invite this is, so the page can say what joining
   * means before anyone signs in. The token is the secret; nothing else is revealed.
   */
  router.on(
    'GET',
    '/api/app/invites/:token',
    {
      summary: 'Whose invite this is, before anyone signs in',
      access: 'public',
      answers: [answer.json(200, '`{ organization: { id, name }, email, role, expiresAt }`.')],
      errors: {
        404: 'No such invite.',
        409: 'The invite was accepted already.',
        410: 'The invite has expired.',
      },
    },
    async (_req, res, p) => {
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
    },
  )

  /**
   * Changes a member's role. Owners may make and unmake owners; admins change admins and
   * members only. The last owner cannot be demoted, so an organisation always has one.
   */
  on(
    'PATCH',
    '/members/:userId',
    {
      summary: "Change a member's role",
      access: 'owner-admin',
      body: memberRole,
      answers: [answer.json(200, '`{ member: { id, email, name, role } }`.')],
      errors: {
        403: 'Only an owner makes or unmakes owners.',
        404: 'No member with that userId.',
        409: 'The last owner cannot be demoted.',
      },
    },
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
  )

  /**
   * Removes a member, or lets a person leave. Owners and admins remove others (admins not
   * owners); the last owner cannot go. The person's live connections are closed at once.
   */
  on(
    'DELETE',
    '/members/:userId',
    {
      summary: 'Remove a member, or leave (your own userId)',
      description:
        "Removing someone else needs owner or admin, and removing an owner needs an owner. The person's live connections to the organisation close at once.",
      access: 'member',
      answers: [answer.noContent('They are no longer a member.')],
      errors: {
        400: 'userId is not a UUID.',
        403: 'Removing someone else needs owner or admin; removing an owner needs an owner.',
        404: 'No member with that userId.',
        409: 'The last owner cannot leave.',
      },
    },
    async (_req, { user, org, params }) => {
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
        await tx.query('delete from memberships where org_id = $1 and user_id = $2', [
          org.id,
          userId,
        ])
      })
      disconnect(live, org.id, userId)
      return { status: 204 }
    },
  )

  /**
   * Deletes a column as delete_column does (the same handler): cards, archived ones
   * included, move to `destinationColumnId` (query parameter) in their order; 409 while a
   * card in it is actively worked.
   */
  on(
    'DELETE',
    '/columns/:columnId',
    {
      summary: 'Delete a column, as delete_column',
      description: actions.delete_column.description,
      access: 'member',
      query: {
        destinationColumnId: {
          description:
            'The column that receives the cards; needed when the column holds any (archived ones count).',
          schema: actions.delete_column.input.shape.destinationColumnId,
        },
      },
      answers: [answer.json(200, 'As delete_column answers.', actions.delete_column.output)],
      claimLocked: actions.delete_column.claimLocked,
      errors: { 404: 'No such column.' },
    },
    async (req, { user, org, params }) => {
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams
      const input = parseParams('delete column', actions.delete_column.input, {
        columnId: params.columnId,
        ...(query.get('destinationColumnId')
          ? { destinationColumnId: query.get('destinationColumnId') }
          : {}),
      })
      const result = await perform(personContext(deps, user, org), 'delete_column', input)
      return { status: 200, body: result }
    },
  )

  /**
   * Deletes one's own comment, permanently. People write comments as Yjs edits but never
   * remove anything from the document themselves (docs/design.md), so removal comes here. A
   * comment by someone else (an agent, another person) is 403.
   */
  on(
    'DELETE',
    '/comments/:commentId',
    {
      summary: 'Delete your own comment, permanently',
      access: 'member',
      answers: [answer.noContent('The comment is gone.')],
      errors: {
        400: 'commentId is not a UUID.',
        403: "The comment is someone else's.",
        404: 'No such comment.',
      },
    },
    async (_req, { user, org, params }) => {
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
    },
  )

  /** The organisation's mind maps, most recently changed first (list_maps). */
  on(
    'GET',
    '/maps',
    {
      summary: "The organisation's mind maps, as list_maps",
      access: 'member',
      answers: [answer.json(200, 'Most recently changed first.', actions.list_maps.output)],
    },
    async (_req, { user, org }) => ({
      status: 200,
      body: await list_maps(personContext(deps, user, org)),
    }),
  )

  /** A new, empty map (create_map). */
  on(
    'POST',
    '/maps',
    {
      summary: 'A new, empty mind map, as create_map',
      access: 'member',
      body: actions.create_map.input,
      answers: [answer.json(201, 'The new map.', actions.create_map.output)],
    },
    async (req, { user, org }) => {
      const input = await bodyOf(req, 'create map', actions.create_map.input)
      return { status: 201, body: await create_map(personContext(deps, user, org), input) }
    },
  )

  /** Renames a map: the list and the document's title together (rename_map). */
  on(
    'PATCH',
    '/maps/:mapId',
    {
      summary: 'Rename a map, as rename_map',
      access: 'member',
      // rename_map's input, its mapId taken from the path.
      body: actions.rename_map.input.omit({ mapId: true }),
      answers: [answer.json(200, 'The renamed map.', actions.rename_map.output)],
      errors: { 404: 'No such map.' },
    },
    async (req, { user, org, params }) => {
      const body = (await readJson(req)) ?? {}
      const input = parseParams('rename map', actions.rename_map.input, {
        ...(typeof body === 'object' ? body : {}),
        mapId: params.mapId,
      })
      return { status: 200, body: await rename_map(personContext(deps, user, org), input) }
    },
  )

  /** Deletes a map and everything on it, permanently (delete_map). */
  on(
    'DELETE',
    '/maps/:mapId',
    {
      summary: 'Delete a map and everything on it, permanently, as delete_map',
      access: 'member',
      answers: [answer.noContent('The map is gone; open copies close.')],
      errors: { 400: 'mapId is not a UUID.', 404: 'No such map.' },
    },
    async (_req, { user, org, params }) => {
      const input = parseParams('delete map', actions.delete_map.input, { mapId: params.mapId })
      await delete_map(personContext(deps, user, org), input)
      return { status: 204 }
    },
  )

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
  on(
    'POST',
    '/maps/:mapId/nodes/:nodeId/image',
    {
      summary: 'Give a node an image, as set_node_image',
      description:
        "The bytes in imageBase64, never resized; the image gets a permanent public URL (imageUrl). Not counted against the agents' rate budgets.",
      access: 'member',
      // set_node_image's input, its nodeId taken from the path.
      body: actions.set_node_image.input.omit({ nodeId: true }),
      answers: [answer.json(200, 'The node with its imageUrl.', actions.set_node_image.output)],
      errors: { 404: 'No such map, or no such node on it.' },
    },
    async (req, { user, org, params }) => {
      const mapId = pathId(params, 'mapId')
      const nodeId = pathId(params, 'nodeId')
      const body = (await readJson(req)) ?? {}
      const input = parseParams('set node image', actions.set_node_image.input, {
        ...(typeof body === 'object' ? body : {}),
        nodeId,
      })
      await nodeOnMap(org.id, mapId, nodeId)
      return { status: 200, body: await set_node_image(personContext(deps, user, org), input) }
    },
  )

  /** Takes a node's image off (clear_node_image); the published file stays. */
  on(
    'DELETE',
    '/maps/:mapId/nodes/:nodeId/image',
    {
      summary: "Take a node's image off, as clear_node_image",
      description: actions.clear_node_image.description,
      access: 'member',
      answers: [answer.json(200, 'The node.', actions.clear_node_image.output)],
      errors: { 400: 'mapId or nodeId is not a UUID.', 404: 'No such map, or no such node on it.' },
    },
    async (_req, { user, org, params }) => {
      const mapId = pathId(params, 'mapId')
      const nodeId = pathId(params, 'nodeId')
      const input = parseParams('clear node image', actions.clear_node_image.input, { nodeId })
      await nodeOnMap(org.id, mapId, nodeId)
      return { status: 200, body: await clear_node_image(personContext(deps, user, org), input) }
    },
  )

  /**
   * A map as a download (export_map): the bytes with their Content-Type, and a file name
   * from the map's title.
   */
  on(
    'GET',
    '/maps/:mapId/export',
    {
      summary: 'Download a map, as export_map',
      description:
        'Mermaid (.mmd), a Markdown outline (.md), SVG or PNG, as an attachment named after the map.',
      access: 'member',
      query: {
        format: {
          description: 'mermaid, markdown, svg or png.',
          schema: actions.export_map.input.shape.format,
          required: true,
        },
      },
      answers: [answer.file('The exported file, Content-Disposition: attachment.')],
      errors: { 400: 'format is missing or unknown.', 404: 'No such map.' },
    },
    async (req, { user, org, params }) => {
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams
      const input = parseParams('export map', actions.export_map.input, {
        mapId: params.mapId,
        format: query.get('format') ?? undefined,
      })
      const map = await readMapContent(personContext(deps, user, org), input.mapId)
      const type = EXPORT_TYPES[input.format]
      return {
        status: 200,
        file: {
          bytes: exportBytes(map, input.format),
          mimeType: type.mimeType,
          filename: mapFileName(map.title, type.extension),
        },
      }
    },
  )

  /** Tidies a map into a tree, live for everyone watching (layout_map). */
  on(
    'POST',
    '/maps/:mapId/layout',
    {
      summary: 'Tidy a map into a tree, as layout_map',
      description: actions.layout_map.description,
      access: 'member',
      // layout_map's input, its mapId taken from the path.
      body: actions.layout_map.input.omit({ mapId: true }),
      answers: [answer.json(200, 'Every node with its new x, y.', actions.layout_map.output)],
      errors: { 404: 'No such map, or rootNodeId is not on it.' },
    },
    async (req, { user, org, params }) => {
      const body = (await readJson(req)) ?? {}
      const input = parseParams('layout map', actions.layout_map.input, {
        ...(typeof body === 'object' ? body : {}),
        mapId: params.mapId,
      })
      return { status: 200, body: await layout_map(personContext(deps, user, org), input) }
    },
  )
}
