import { z } from 'zod'
import { COLUMN_ROLES, PRIORITIES, TASK_TYPES } from '../constants.ts'
import { EXPORT_FORMATS } from './maps.ts'

/**
 * What every action returns, as schemas: the records the agent endpoint answers with
 * (once each), and each action's result built from them. Objects are strict, so a field
 * the schema does not name is a failure, not a silent extra: test/agent/outputs.test.ts
 * runs every action and checks its real answer against its schema.
 */

const uuid = z.uuid()
const time = z.iso.datetime({ offset: true })
const nullable = <T extends z.ZodType>(t: T) => t.nullable()
/** A file link: absolute under PUBLIC_URL, else a path on the service's own host. */
const link = z.string().regex(/^(https?:\/\/[^\s]+|\/[^\s]*)$/, 'a link: an http(s) URL or a path')

export const claimRecord = z.strictObject({
  taskId: uuid,
  agentName: nullable(z.string()),
  house: nullable(z.string()),
  generation: nullable(z.number().int()),
  isSubChild: z.boolean(),
  status: z.enum(['working', 'lapsed', 'released']),
  note: nullable(z.string()),
  startedAt: time,
  updatedAt: time,
  expiresAt: time,
  releasedAt: nullable(time),
  isLive: z.boolean(),
  holder: z.string(),
})

const lastCommentBy = nullable(z.enum(['human', 'agent']))

export const task = z.strictObject({
  id: uuid,
  columnId: uuid,
  projectId: nullable(uuid),
  projectName: nullable(z.string()),
  title: z.string(),
  description: z.string(),
  type: nullable(z.enum(TASK_TYPES)),
  priority: nullable(z.enum(PRIORITIES)),
  ownPriority: nullable(z.enum(PRIORITIES)),
  tags: z.array(z.string()),
  blockedBy: z.array(uuid),
  blocked: z.boolean(),
  assigneeIds: z.array(z.string()),
  position: z.number(),
  createdAt: time,
  updatedAt: time,
  archivedAt: nullable(time),
  createdByEmail: z.string(),
  claim: nullable(claimRecord),
  commentCount: z.number().int().nonnegative(),
  imageCount: z.number().int().nonnegative(),
  lastCommentBy,
  lastCommentAt: nullable(time),
  lastCommentAuthor: nullable(z.string()),
  commentsTruncated: z.boolean().optional(),
  /** The description was shortened to fit an answer budget: get_task reads it whole. */
  descriptionTruncated: z.boolean().optional(),
})

export const taskSummary = z.strictObject({
  id: uuid,
  columnId: uuid,
  projectId: nullable(uuid),
  title: z.string(),
  type: nullable(z.enum(TASK_TYPES)),
  priority: nullable(z.enum(PRIORITIES)),
  tags: z.array(z.string()),
  blocked: z.boolean(),
  assigneeIds: z.array(z.string()),
  commentCount: z.number().int().nonnegative(),
  imageCount: z.number().int().nonnegative(),
  lastCommentBy,
  lastCommentAt: nullable(time),
  updatedAt: time,
  commentsTruncated: z.boolean().optional(),
  claimedBy: nullable(z.string()),
})

const columnFields = {
  id: uuid,
  title: z.string(),
  position: z.number(),
  role: nullable(z.enum(COLUMN_ROLES)),
  projectId: nullable(uuid),
}
export const column = z.strictObject({ ...columnFields, onFire: z.boolean() })

export const project = z.strictObject({
  id: uuid,
  name: z.string(),
  color: z.string(),
  createdAt: time,
})

export const comment = z.strictObject({
  id: uuid,
  taskId: uuid,
  body: z.string(),
  authorEmail: z.string(),
  agentName: nullable(z.string()),
  createdAt: time,
  editedAt: nullable(time),
})

const attachmentFields = {
  id: uuid,
  taskId: uuid,
  filename: z.string(),
  mimeType: z.string(),
  size: z.number().int().nonnegative(),
  createdAt: time,
}
export const attachment = z.strictObject({
  ...attachmentFields,
  url: link.optional(),
  urlExpiresAt: time.optional(),
})

export const assignee = z.strictObject({ id: z.string(), name: z.string(), email: z.string() })

export const mindMap = z.strictObject({
  id: uuid,
  title: z.string(),
  createdAt: time,
  updatedAt: time,
})

export const mapNode = z.strictObject({
  id: uuid,
  mapId: uuid,
  text: z.string(),
  x: z.number(),
  y: z.number(),
  color: nullable(z.string()),
  imageUrl: link.optional(),
})

export const mapEdge = z.strictObject({ id: uuid, mapId: uuid, sourceId: uuid, targetId: uuid })

/**
 * What an answer cut to fit a budget (MCP_ANSWER_TOKENS, the Answer-Tokens header) adds: one
 * sentence saying what was left out and how to narrow or page on.
 */
const note = z.string().optional()
/** A page's next cursor: null on the last page; present once paging was asked for or needed. */
const nextCursor = nullable(z.string()).optional()
/** Records left out of a write's answer to fit a budget (they were all written). */
const omitted = z.number().int().positive().optional()

/** A search hit: the card in the summary form, and where the words matched. */
export const searchHit = taskSummary.extend({
  archivedAt: nullable(time),
  match: z.strictObject({
    field: z.enum(['title', 'description', 'comment']),
    snippet: z.string(),
    commentId: uuid.optional(),
  }),
})

const ok = z.strictObject({ ok: z.literal(true) })
const withTask = z.strictObject({ task })
const withComment = z.strictObject({ comment })
const withClaim = z.strictObject({ claim: claimRecord })
const withMap = z.strictObject({ map: mindMap })
const withNode = z.strictObject({ node: mapNode })

/** Each action's result on success. */
export const outputs = {
  whoami: z.strictObject({
    organization: z.strictObject({ id: uuid, name: z.string() }),
    key: z.strictObject({ id: uuid, name: z.string(), prefix: z.string(), createdAt: time }),
    agent: z.strictObject({ email: z.string(), label: z.string() }),
    // What is on the board now (history is not counted: it would cost a scan of it).
    board: z.strictObject({
      columns: z.number().int().nonnegative(),
      tasks: z.number().int().nonnegative(),
      projects: z.number().int().nonnegative(),
    }),
  }),
  get_board: z.strictObject({
    columns: z.array(column),
    tasks: z.union([z.array(task), z.array(taskSummary)]),
    /** On the first page only (every page without paging). */
    activity: z.array(claimRecord).optional(),
    tags: z.array(z.string()).optional(),
    comments: z.array(comment).optional(),
    attachments: z.array(attachment).optional(),
    nextCursor,
    /** On a paged answer's first page: a get_changes cursor taken before the board was read. */
    changesCursor: time.optional(),
    /** activity was cut to fit a budget: live claims first, then the most recent. */
    activityTruncated: z.boolean().optional(),
    note,
  }),
  get_task: z.strictObject({
    task,
    claim: nullable(claimRecord),
    assignees: z.array(assignee),
    comments: z.array(comment),
    attachments: z.array(attachment),
    images: z.array(
      z.strictObject({ attachmentId: uuid, mimeType: z.string(), dataBase64: z.string() }),
    ),
    /** Older comments were left out (a budget, or commentsBefore asked for a page). */
    commentsTruncated: z.boolean().optional(),
    /** Send as commentsBefore for the older comments; null when there are none. */
    commentsBefore: nullable(z.string()).optional(),
    note,
  }),
  list_columns: z.strictObject({
    columns: z.array(z.strictObject(columnFields)),
    nextCursor,
    note,
  }),
  list_projects: z.strictObject({ projects: z.array(project), nextCursor, note }),
  search_tasks: z.strictObject({
    tasks: z.array(searchHit),
    nextCursor: nullable(z.string()),
    note,
  }),
  create_task: withTask,
  update_task: withTask,
  set_task_tags: withTask,
  set_task_dependencies: withTask,
  move_task: withTask,
  add_comment: withComment,
  update_comment: withComment,
  delete_comment: z.strictObject({ deleted: z.literal(true), commentId: uuid }),
  archive_task: z.strictObject({ taskId: uuid, archivedAt: time }),
  create_column: z.strictObject({ column }),
  rename_column: z.strictObject({ columnId: uuid, title: z.string(), updatedAt: time }),
  delete_column: z.strictObject({
    deleted: z.literal(true),
    columnId: uuid,
    movedCount: z.number().int().nonnegative(),
  }),
  claim_task: withClaim,
  heartbeat_task: withClaim,
  claim_next: z.strictObject({ task: nullable(task), claim: nullable(claimRecord) }),
  release_task: z.strictObject({ taskId: uuid, released: z.boolean() }),
  get_changes: z.strictObject({
    cursor: time,
    tasks: z.array(task),
    columns: z.array(column),
    comments: z.array(comment),
    attachments: z.array(attachment),
    claims: z.array(claimRecord),
    truncated: z.boolean(),
    note,
  }),
  list_maps: z.strictObject({
    maps: z.array(z.strictObject({ id: uuid, title: z.string(), updatedAt: time })),
    nextCursor,
    note,
  }),
  create_map: withMap,
  rename_map: withMap,
  get_map: z.strictObject({
    map: mindMap,
    nodes: z.array(mapNode),
    edges: z.array(mapEdge),
    nextCursor,
    note,
  }),
  delete_map: ok,
  create_node: withNode,
  create_nodes: z.strictObject({ nodes: z.array(mapNode), omitted, note }),
  update_node: withNode,
  set_node_image: withNode,
  clear_node_image: withNode,
  delete_node: ok,
  create_edge: z.strictObject({ edge: mapEdge }),
  create_edges: z.strictObject({ edges: z.array(mapEdge), omitted, note }),
  delete_edge: ok,
  export_map: z.strictObject({
    mapId: uuid,
    format: z.enum(EXPORT_FORMATS),
    mimeType: z.string(),
    content: z.string(),
    /** A text export cut to fit a budget, at a line's end: send as offset for the rest. */
    nextOffset: nullable(z.number().int()).optional(),
    note,
  }),
  layout_map: z.strictObject({
    nodes: z.array(z.strictObject({ id: uuid, x: z.number(), y: z.number() })),
    omitted,
    note,
  }),
  attach_screenshot: z.strictObject({ attachment: z.strictObject(attachmentFields) }),
}
