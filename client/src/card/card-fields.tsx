import { PRIORITIES, type Priority, TASK_TYPES } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import { appApi } from '../api/app-api.ts'
import { moveTask, positionBetween, updateTask } from '../board/board-actions.ts'
import type { CardView } from '../board/board-store.ts'
import { PRIORITY_LABELS, TYPE_LABELS } from '../board/card.tsx'
import { useColumns, useProjects, useTags } from '../board/use-board.ts'
import { memberName, useWorkspace } from '../workspace.tsx'
import { Assignees } from './assignees.tsx'
import { ROBOT_EMAIL } from './comments.tsx'
import { TagsInput } from './tags-input.tsx'

/** A select of one of `options`, or none of them (null). */
export function OptionalSelect<T extends string>(props: {
  label: string
  value: T | null
  none: string
  options: readonly T[]
  labels: Record<T, string>
  disabled: boolean
  onChange: (value: T | null) => void
}) {
  return (
    <select
      aria-label={props.label}
      value={props.value ?? ''}
      disabled={props.disabled}
      onChange={(e) => props.onChange((e.target.value || null) as T | null)}
    >
      <option value="">{props.none}</option>
      {props.options.map((o) => (
        <option key={o} value={o}>
          {props.labels[o]}
        </option>
      ))}
    </select>
  )
}

/** Who created a card, for the eye: a member by name, an API key's robot as an agent. */
export function authorOf(
  email: string,
  members: readonly { email: string; name: string }[],
): string {
  if (ROBOT_EMAIL.test(email)) return 'an agent (API key)'
  return members.find((m) => m.email === email)?.name ?? email
}

/**
 * The card's fields (column, type, priority, project, assignees, tags), each written to
 * the board document as it changes; all read-only while an agent holds a live claim.
 */
export function CardFields({
  card,
  locked,
  onFire,
  columnTitle,
  run,
}: {
  card: CardView
  locked: boolean
  onFire: boolean
  columnTitle: string | undefined
  run: (what: () => Promise<unknown>, done?: string) => Promise<void>
}) {
  const { store, org, members } = useWorkspace()
  const columns = useColumns(store)
  const projects = useProjects(store)
  const allTags = useTags(store)
  const taskId = card.id
  const effective = effectivePriority(card.priority, onFire)
  const moveTo = (columnId: string) => {
    const ids = store.cardsOf(columnId).ids.filter((id) => id !== taskId)
    const last = ids.length > 0 ? store.card(ids[ids.length - 1] as string) : undefined
    moveTask(store.doc, taskId, columnId, positionBetween(last?.position, undefined))
  }

  return (
    <dl className="props">
      <dt>Column</dt>
      <dd>
        <select
          aria-label="Column"
          value={card.columnId}
          disabled={locked}
          onChange={(e) => moveTo(e.target.value)}
        >
          {columns.map((c) => (
            <option key={c.id} value={c.id}>
              {c.title}
            </option>
          ))}
        </select>
      </dd>
      <dt>Type</dt>
      <dd>
        <OptionalSelect
          label="Type"
          value={card.type}
          none="No type"
          options={TASK_TYPES}
          labels={TYPE_LABELS}
          disabled={locked}
          onChange={(type) => updateTask(store.doc, taskId, { type })}
        />
      </dd>
      <dt>Priority</dt>
      <dd>
        <OptionalSelect
          label="Priority"
          value={card.priority}
          none="Untriaged"
          options={PRIORITIES}
          labels={PRIORITY_LABELS}
          disabled={locked}
          onChange={(priority) => updateTask(store.doc, taskId, { priority })}
        />
        {onFire && effective !== card.priority && (
          <span className="field-hint">
            Counts as {PRIORITY_LABELS[effective as Priority].toLowerCase()} while “{columnTitle}”
            is on fire.
          </span>
        )}
      </dd>
      <dt>Project</dt>
      <dd className="prop-row">
        <select
          aria-label="Project"
          value={card.projectId ?? ''}
          disabled={locked}
          onChange={(e) => {
            if (e.target.value) updateTask(store.doc, taskId, { projectId: e.target.value })
          }}
        >
          {!card.projectId && <option value="">No project</option>}
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
        {card.projectId && (
          <button
            type="button"
            className="btn btn-ghost btn-small"
            onClick={() =>
              void run(() => appApi.removeTaskProject(org.id, taskId), 'Project removed')
            }
          >
            Remove project
          </button>
        )}
      </dd>
      <dt>Assignees</dt>
      <dd>
        <Assignees
          selected={card.assigneeIds}
          disabled={locked}
          onChange={(ids) => updateTask(store.doc, taskId, { assigneeIds: ids })}
          names={(id) => memberName(members.members, id)}
        />
      </dd>
      <dt>Tags</dt>
      <dd>
        <TagsInput
          tags={card.tags}
          suggestions={allTags}
          disabled={locked}
          onChange={(tags) => updateTask(store.doc, taskId, { tags })}
        />
      </dd>
    </dl>
  )
}
