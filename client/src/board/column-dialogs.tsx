import { useState } from 'react'
import { COLUMN_ROLES, type ColumnRole, LIMITS } from '../../../shared/constants.ts'
import type { Column } from '../../../shared/records.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { PlusIcon } from '../ui/icons.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { Modal } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { ROLE_LABELS } from './column.tsx'

export function AddColumnButton({ onAdd }: { onAdd: (title: string) => void }) {
  const [open, setOpen] = useState(false)
  const [title, setTitle] = useState('')
  return (
    <>
      <button type="button" className="btn btn-primary" onClick={() => setOpen(true)}>
        <PlusIcon size={15} /> Column
      </button>
      <Modal open={open} onClose={() => setOpen(false)} title="New column">
        <form
          className="form"
          onSubmit={(e) => {
            e.preventDefault()
            if (!title.trim()) return
            onAdd(title.trim())
            setTitle('')
            setOpen(false)
          }}
        >
          <Labeled label="Title">
            {(p) => (
              <input
                {...p}
                value={title}
                maxLength={LIMITS.columnTitle.max}
                onChange={(e) => setTitle(e.target.value)}
                required
                // biome-ignore lint/a11y/noAutofocus: the dialog exists to type this title
                autoFocus
              />
            )}
          </Labeled>
          <div className="modal-actions">
            <button type="button" className="btn" onClick={() => setOpen(false)}>
              Cancel
            </button>
            <button type="submit" className="btn btn-primary" disabled={!title.trim()}>
              Add column
            </button>
          </div>
        </form>
      </Modal>
    </>
  )
}

export function ColumnSettings({ column, onClose }: { column: Column; onClose: () => void }) {
  const { org } = useWorkspace()
  const [role, setRole] = useState<ColumnRole | ''>(column.role ?? '')
  const [onFire, setOnFire] = useState(column.onFire)
  const [busy, setBusy] = useState(false)
  const save = async () => {
    setBusy(true)
    try {
      await appApi.patchColumn(org.id, column.id, { role: role || null, onFire })
      onClose()
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Modal open onClose={onClose} title={`Column “${column.title}”`}>
      <form
        className="form"
        onSubmit={(e) => {
          e.preventDefault()
          void save()
        }}
      >
        <Labeled label="Role" hint="Agents read the role to know what the column means.">
          {(p) => (
            <select
              {...p}
              value={role}
              onChange={(e) => setRole(e.target.value as ColumnRole | '')}
            >
              <option value="">No role</option>
              {COLUMN_ROLES.map((r) => (
                <option key={r} value={r}>
                  {ROLE_LABELS[r]}
                </option>
              ))}
            </select>
          )}
        </Labeled>
        <label className="check">
          <input type="checkbox" checked={onFire} onChange={(e) => setOnFire(e.target.checked)} />
          <span>On fire: every card in it counts as at least high priority</span>
        </label>
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            Save
          </button>
        </div>
      </form>
    </Modal>
  )
}

export function DeleteColumn({ column, onClose }: { column: Column; onClose: () => void }) {
  const { org, store } = useWorkspace()
  const held = [...store.allCards()].filter((c) => c.columnId === column.id)
  const others = store.columns().filter((c) => c.id !== column.id)
  const [dest, setDest] = useState(others[0]?.id ?? '')
  const [busy, setBusy] = useState(false)
  const remove = async () => {
    setBusy(true)
    try {
      // Archived cards of the column move too (they are not on the board to count here).
      const { movedCount } = await appApi.deleteColumn(org.id, column.id, dest || undefined)
      toast(
        'success',
        movedCount > 0
          ? `Deleted “${column.title}”; ${movedCount} card${movedCount === 1 ? '' : 's'} moved.`
          : `Deleted “${column.title}”.`,
      )
      onClose()
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Modal open onClose={onClose} title={`Delete “${column.title}”?`}>
      <form
        className="form"
        onSubmit={(e) => {
          e.preventDefault()
          void remove()
        }}
      >
        {held.length === 0 ? (
          <p>The column is empty. Deleting it cannot be undone.</p>
        ) : (
          <>
            <p>
              It holds {held.length} card{held.length === 1 ? '' : 's'}. They move to the bottom of
              another column, in their order, with the column's archived cards.
            </p>
            <Labeled label="Move the cards to">
              {(p) => (
                <select {...p} value={dest} onChange={(e) => setDest(e.target.value)} required>
                  {others.map((c) => (
                    <option key={c.id} value={c.id}>
                      {c.title}
                    </option>
                  ))}
                </select>
              )}
            </Labeled>
          </>
        )}
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-danger"
            disabled={busy || (held.length > 0 && !dest)}
          >
            Delete column
          </button>
        </div>
      </form>
    </Modal>
  )
}
