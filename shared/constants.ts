/** Values and limits of the specification, in one place for server, client and tests. */

export const TASK_TYPES = [
  'bug',
  'feature',
  'improvement',
  'chore',
  'question',
  'research',
] as const
export type TaskType = (typeof TASK_TYPES)[number]

/** Most urgent first. */
export const PRIORITIES = ['urgent', 'high', 'normal', 'low'] as const
export type Priority = (typeof PRIORITIES)[number]

export const COLUMN_ROLES = ['backlog', 'ready', 'in_progress', 'done', 'blocked'] as const
export type ColumnRole = (typeof COLUMN_ROLES)[number]

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const
export type MemberRole = (typeof MEMBER_ROLES)[number]

export const LIMITS = {
  taskTitle: { min: 1, max: 500 },
  taskDescription: { max: 20_000 },
  tagsPerCard: 20,
  tagLength: 40,
  commentBody: { min: 1, max: 10_000 },
  columnTitle: { min: 1, max: 200 },
  projectName: { min: 1, max: 100 },
  mapTitle: { min: 1, max: 200 },
  nodeText: { max: 4_000 },
  createNodes: { min: 1, max: 100 },
  createEdges: { min: 1, max: 200 },
  agentName: { min: 1, max: 80 },
  house: { min: 1, max: 40 },
  generation: { min: 1, max: 10_000 },
  claimNote: { min: 1, max: 500 },
  filename: { min: 1, max: 100 },
  imageBytes: 3 * 1024 * 1024,
  changesLimit: { default: 200, max: 500 },
  includeComments: 500,
  includeAttachments: 250,
  commentsPerCard: { default: 5, min: 1, max: 50 },
  /** get_board with limit: cards per page. */
  boardPage: { min: 1, max: 500 },
  /** get_map with limit: nodes and edges per page. */
  mapPage: { min: 1, max: 5000 },
  searchPage: { default: 20, min: 1, max: 100 },
  searchQuery: { max: 500 },
} as const

/** A `#` hex accent colour: `#rgb` or `#rrggbb`, as the app's project colours. */
export const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/

/** Gap left between appended positions, so a card can be dropped between two without renumbering. */
export const POSITION_STEP = 1024

/** The events a webhook can subscribe to: the specification's, and card.unblocked. */
export const WEBHOOK_EVENT_TYPES = [
  'card.created',
  'card.moved',
  'comment.added',
  'card.unblocked',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]
