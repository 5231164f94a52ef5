import { z } from 'zod'
import { COLUMN_ROLES, LIMITS } from '../constants.ts'
import { bool, oneOf, text } from './common.ts'

/** Bodies of the app API (docs/design.md Contract 2): what the web client and scripts send as a person. */

const email = z
  .string({
    error: (i) => (i.input === undefined ? 'email is required' : 'email must be a string'),
  })
  .trim()
  .pipe(z.email({ error: 'email must be an e-mail address' }))

export const hexColor = z
  .string({ error: 'color must be a string' })
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, {
    error: 'color must be a # hex colour like #3b82f6',
  })

export const signup = z.strictObject({
  email,
  password: text('password', 8, 200),
  name: text('name', 1, 100),
  organizationName: text('organizationName', 1, 100),
})

export const login = z.strictObject({ email, password: text('password', 1, 200) })

export const createApiKey = z.strictObject({ name: text('name', 1, 100) })

export const createInvite = z.strictObject({ email, role: oneOf('role', ['admin', 'member']) })

export const createProject = z.strictObject({
  name: text('name', LIMITS.projectName.min, LIMITS.projectName.max),
  color: hexColor.optional(),
})

export const patchColumn = z.strictObject({
  role: z
    .union([oneOf('role', COLUMN_ROLES), z.null()], {
      error: `role must be one of ${COLUMN_ROLES.join(', ')} or null`,
    })
    .optional(),
  onFire: bool('onFire').optional(),
})
