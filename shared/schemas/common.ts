import { z } from 'zod'
import { LIMITS, PRIORITIES, TASK_TYPES } from '../constants.ts'

/**
 * Builders for parameters whose error messages name the parameter and the rule, so every
 * 400 tells the caller exactly what to fix.
 */

export const required = (name: string, expected: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${name} is required` : `${name} must be ${expected}`

/** What each id parameter names, written once for every action that takes it. */
const ID_MEANS: Record<string, string> = {
  taskId: 'The card.',
  columnId: 'The column (list_columns).',
  destinationColumnId: 'The column that receives the cards.',
  projectId: 'The project (list_projects).',
  commentId: 'The comment.',
  mapId: 'The map (list_maps).',
  nodeId: 'The node (get_map).',
  edgeId: 'The edge (get_map).',
  sourceId: 'The node the edge starts from.',
  targetId: 'The node the edge points to.',
}

export const id = (name: string) => {
  const schema = z
    .guid({ error: required(name, 'a UUID (malformed id)') })
    .transform((s) => s.toLowerCase())
  const means = ID_MEANS[name]
  return means ? schema.describe(means) : schema
}

export const text = (name: string, min: number, max: number) =>
  z
    .string({ error: required(name, 'a string') })
    .min(min, { error: `${name} must be ${min}–${max} characters` })
    .max(max, { error: `${name} must be ${min}–${max} characters (limit ${max})` })

export const int = (name: string, min: number, max: number) =>
  z
    .number({ error: required(name, 'a number') })
    .int({ error: `${name} must be an integer` })
    .min(min, { error: `${name} must be between ${min} and ${max}` })
    .max(max, { error: `${name} must be between ${min} and ${max}` })

export const finite = (name: string) =>
  z.number({ error: required(name, 'a finite number') }).refine(Number.isFinite, {
    error: `${name} must be a finite number`,
  })

export const bool = (name: string) => z.boolean({ error: required(name, 'true or false') })

export const oneOf = <const T extends readonly [string, ...string[]]>(name: string, values: T) =>
  z.enum(values, { error: required(name, `one of ${values.join(', ')}`) })

export const taskType = oneOf('type', TASK_TYPES).describe('The kind of work.')
export const priority = oneOf('priority', PRIORITIES).describe(
  'How urgent; a card without one is untriaged.',
)

/** Where a card or column goes among its siblings: ascending, any finite number. */
export const position = finite('position').describe('Order among siblings; leave out to append.')

/**
 * Identity params every write accepts (docs/design.md): agents sharing one key are told apart
 * by name; a write that sends none is checked by key only.
 */
export const identity = {
  agentName: text('agentName', LIMITS.agentName.min, LIMITS.agentName.max)
    .describe('Your name on the board.')
    .optional(),
  house: text('house', LIMITS.house.min, LIMITS.house.max).describe('Your house.').optional(),
  generation: int('generation', LIMITS.generation.min, LIMITS.generation.max)
    .describe('Your generation.')
    .optional(),
  isSubChild: bool('isSubChild').describe('You are a sub-agent.').optional(),
}

/** A cursor from a previous page's `nextCursor`, sent back unchanged. */
export const cursor = (name = 'cursor') =>
  z
    .string({ error: required(name, 'a string (the nextCursor of a previous page)') })
    .refine((s) => s.length > 0 && s.length <= 1000, {
      error: `${name} must be the nextCursor of a previous page`,
    })
    .describe('The nextCursor of the previous page.')

/** Params object of an action: unknown names are a 400, never a silent no-op. */
export const params = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape)

/** Params object of a write: its own params plus the identity params. */
export const writeParams = <T extends z.ZodRawShape>(shape: T) =>
  z.strictObject({ ...shape, ...identity })
