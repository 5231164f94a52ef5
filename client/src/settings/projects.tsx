import { type FormEvent, useMemo, useState } from 'react'
import { LIMITS } from '../../../shared/constants.ts'
import { appApi } from '../api/app-api.ts'
import { useBoard, useProjects } from '../board/use-board.ts'
import { Link } from '../router.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { useSubmit } from './admin-parts.tsx'

const SWATCHES = [
  '#3b82f6',
  '#10b981',
  '#f59e0b',
  '#ef4444',
  '#8b5cf6',
  '#ec4899',
  '#14b8a6',
  '#64748b',
]

/** Projects: made by people (agents only list them), live from the board document. */
export function Projects() {
  const { org, store } = useWorkspace()
  const projects = useProjects(store)
  const layout = useBoard(store, 'layout', (s) => s.layout())
  const [color, setColor] = useState<string>(SWATCHES[0] as string)
  const [busy, submit] = useSubmit()
  const counts = useMemo(() => {
    void layout
    const out = new Map<string, number>()
    for (const c of store.allCards()) {
      if (c.projectId && !c.archivedAt) out.set(c.projectId, (out.get(c.projectId) ?? 0) + 1)
    }
    return out
  }, [store, layout])

  const create = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const name = String(new FormData(form).get('name')).trim()
    if (!name) return
    await submit(async () => {
      await appApi.createProject(org.id, name, color)
      toast('success', `Project “${name}” created`)
      form.reset()
    })
  }

  return (
    <div className="settings-stack">
      <section className="settings-card" aria-labelledby="newproject-heading">
        <h2 id="newproject-heading">New project</h2>
        <form className="inline-form" onSubmit={create}>
          <Labeled label="Name" className="grow">
            {(p) => (
              <input
                {...p}
                name="name"
                required
                maxLength={LIMITS.projectName.max}
                placeholder="e.g. Checkout"
              />
            )}
          </Labeled>
          <fieldset className="field">
            <legend>Colour</legend>
            <div className="swatches">
              {SWATCHES.map((s) => (
                <label key={s} className="swatch" style={{ background: s }} title={s}>
                  <input
                    type="radio"
                    name="color"
                    value={s}
                    checked={color === s}
                    onChange={() => setColor(s)}
                    aria-label={`Colour ${s}`}
                  />
                </label>
              ))}
            </div>
          </fieldset>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            Create project
          </button>
        </form>
      </section>
      <section className="settings-card" aria-labelledby="projects-heading">
        <h2 id="projects-heading">Projects</h2>
        {projects.length === 0 ? (
          <p className="muted">No projects yet. Cards can still live without one.</p>
        ) : (
          <ul className="plain-list">
            {projects.map((p) => (
              <li key={p.id}>
                <span className="project-dot" style={{ background: p.color }} aria-hidden="true" />
                <span className="grow">{p.name}</span>
                <span className="muted small">
                  {counts.get(p.id) ?? 0} card{counts.get(p.id) === 1 ? '' : 's'}
                </span>
                <Link className="btn btn-ghost btn-small" to={`/o/${org.id}/board?project=${p.id}`}>
                  Open board
                </Link>
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  )
}
