import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { z } from 'zod'
import { boardMaps, readProject } from '../../../shared/board-doc.ts'
import * as body from '../../../shared/schemas/app.ts'
import { project } from '../../../shared/schemas/outputs.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, bodyOf } from './route.ts'

const PROJECT_COLORS = [
  '#3b82f6',
  '#10b981',
  '#f59e0b',
  '#ef4444',
  '#8b5cf6',
  '#ec4899',
  '#14b8a6',
  '#64748b',
]

const projectList = z.strictObject({ projects: z.array(project) })
const withProject = z.strictObject({ project })

/** Projects: made by people (agents only list them), read from the board document. */
export function projectRoutes(app: AppRouter): void {
  app.org(
    'GET',
    '/projects',
    {
      summary: "The organisation's projects, oldest first",
      access: 'member',
      answers: [answer.json(200, 'The projects.', projectList)],
    },
    async (_req, member) => {
      const projects = await app
        .context(member)
        .readBoard(
          (view) =>
            [...view.projects.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt)),
          { descriptions: false },
        )
      return { status: 200, body: { projects } }
    },
  )

  app.org(
    'POST',
    '/projects',
    {
      summary: 'Make a project (agents only list them)',
      description: 'Without color, one of eight colours in turn.',
      access: 'member',
      body: body.createProject,
      answers: [answer.json(201, 'The new project.', withProject)],
    },
    async (req, member) => {
      const input = await bodyOf(req, 'create project', body.createProject)
      const id = randomUUID()
      const project = await app.context(member).writeBoard(async (w) => {
        const color =
          input.color ?? PROJECT_COLORS[boardMaps(w.doc).projects.size % PROJECT_COLORS.length]
        w.mutate((doc) => {
          const m = new Y.Map<unknown>()
          m.set('name', input.name)
          m.set('color', color)
          m.set('createdAt', w.now)
          boardMaps(doc).projects.set(id, m)
        })
        return readProject(id, boardMaps(w.doc).projects.get(id) as Y.Map<unknown>)
      })
      return { status: 201, body: { project } }
    },
  )
}
