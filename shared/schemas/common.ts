import { z } from 'zod'
import { LIMITS, PRIORITIES, TASK_TYPES } from '../constants.ts'

/**
 * Builders for parameters whose error messages name the parameter and the rule, so every
 * 400 tells the caller exactly what to fix.
 */

const required = (name: string, expected: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${name} is required` : `${name} must be ${expected}`

export const id = (name: string) =>
  z.guid({ error: required(name, 'a UUID (malformed id)') }).transform((s) => s.toLowerCase())

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

export const taskType = oneOf('type', TASK_TYPES)
export const priority = oneOf('priority', PRIORITIES)

/**
 * Identity params every write accepts (docs/design.md): agents sharing one key are told apart
 * by name; a write that sends none is checked by key only.
 */
export const identity = {
  agentName: text('agentName', LIMITS.agentName.min, LIMITS.agentName.max).optional(),
  house: text('house', LIMITS.house.min, LIMITS.house.max).optional(),
  generation: int('generation', LIMITS.generation.min, LIMITS.generation.max).optional(),
  isSubChild: bool('isSubChild').optional(),
}

/** Params object of an action: unknown names are a 400, never a silent no-op. */
export const params = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape)

/** Params object of a write: its own params plus the identity params. */
export const writeParams = <T extends z.ZodRawShape>(shape: T) =>
  z.strictObject({ ...shape, ...identity })
