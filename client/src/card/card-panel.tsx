import { useCallback, useEffect, useId, useRef, useState, useSyncExternalStore } from 'react'
import { cardMaps } from '../../../shared/card-doc.ts'
import { LIMITS } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { ClaimRecord } from '../../../shared/records.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { archiveTask, updateTask } from '../board/board-actions.ts'
import { type PresenceStore, usePresence } from '../board/presence.ts'
import { useCard, useColumns, useProjects, useTags } from '../board/use-board.ts'
import type { DocStatus } from '../live/live-doc.ts'
import { useDocStatus } from '../live/use-live.ts'
import { useYTextString } from '../live/use-ytext.ts'
import { useQueryParam } from '../router.tsx'
import { Avatar } from '../ui/avatar.tsx'
import { ArchiveIcon, CloseIcon, LinkIcon, MoreIcon, TrashIcon } from '../ui/icons.tsx'
import { MarkdownView } from '../ui/markdown-view.tsx'
import { Menu } from '../ui/menu.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { Screenshots } from './attachments.tsx'
import { authorOf, CardFields } from './card-fields.tsx'
import { type CardStore, useCardStore } from './card-store.ts'
import { ClaimDetails } from './claim-details.tsx'
import { Comments, relativeTime } from './comments.tsx'
import { Dependencies } from './dependencies.tsx'
import { DescriptionEditor } from './description-editor.tsx'
import { CardHistory } from './history.tsx'

/** The card, opened beside the board: every field, live, with the claim and the thread. */
export default function CardPanel({
  taskId,
  presence,
  onClose,
}: {
  taskId: string
  presence: PresenceStore
  onClose: () => void
}) {
  const { store, board } = useWorkspace()
  const card = useCard(store, taskId)
  const cardDoc = useCardStore(taskId)
  const status = useDocStatus(board)
  const panel = useRef<HTMLElement>(null)
  const opener = useRef<Element | null>(null)

  useEffect(() => {
    opener.current = document.activeElement
    // Focus moves into the panel (announced by its label), not into a field that would
    // take the next keystroke as an edit.
    panel.current?.focus()
    return () => {
      // Back to the card that opened the panel, if it is still on the board.
      const back = opener.current
      if (back instanceof HTMLElement && back.isConnected) back.focus()
    }
  }, [])

  useEffect(() => {
    // A link to another card (a blocker, say) replaces what the panel shows, and the link
    // with it: keep focus in the panel rather than let it fall to the page.
    void taskId
    if (document.activeElement === document.body) panel.current?.focus()
  }, [taskId])

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return
      if (document.querySelector('dialog[open]')) return
      onClose()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [onClose])

  return (
    <aside
      ref={panel}
      className="card-panel"
      aria-label="Card details"
      data-testid="card-panel"
      tabIndex={-1}
    >
      {card ? (
        <PanelBody
          key={taskId}
          taskId={taskId}
          cardDoc={cardDoc}
          presence={presence}
          onClose={onClose}
        />
      ) : (
        <div className="panel-missing">
          <button
            type="button"
            className="icon-btn panel-close"
            aria-label="Close card"
            onClick={onClose}
          >
            <CloseIcon />
          </button>
          <p>
            {status.loaded || status.synced
              ? 'This card is not on the board: it was archived or deleted. Archived cards are listed under “Archived” and can be restored from there.'
              : 'Loading the card…'}
          </p>
        </div>
      )}
    </aside>
  )
}

/**
 * Opened from a search hit: the panel scrolls to where the words matched (the description,
 * or one comment) and marks it for a moment, once the card's document is in.
 */
function useScrollToMatch(at: string | null, ready: boolean): void {
  useEffect(() => {
    if (!at || !ready) return
    const selector = at.startsWith('comment:')
      ? `[data-comment-id="${CSS.escape(at.slice('comment:'.length))}"]`
      : at === 'description'
        ? '[data-testid="description-section"]'
        : '.panel-title'
    // The thread renders a moment after the document is in: look again for a few seconds.
    let tries = 0
    let unmark: ReturnType<typeof setTimeout> | undefined
    const look = setInterval(() => {
      const el = document.querySelector<HTMLElement>(`.card-panel ${selector}`)
      if (!el && ++tries < 50) return
      clearInterval(look)
      if (!el) return
      el.scrollIntoView({ block: 'center' })
      el.classList.add('at-match')
      unmark = setTimeout(() => el.classList.remove('at-match'), 3000)
    }, 60)
    return () => {
      clearInterval(look)
      clearTimeout(unmark)
    }
  }, [at, ready])
}

/** The card document's status, once it is open. */
function useCardDocStatus(cardDoc: CardStore | undefined): DocStatus | undefined {
  const subscribe = useCallback(
    (notify: () => void) => cardDoc?.live.subscribe(notify) ?? (() => {}),
    [cardDoc],
  )
  return useSyncExternalStore(subscribe, () => cardDoc?.live.status)
}

function PanelBody({
  taskId,
  cardDoc,
  presence,
  onClose,
}: {
  taskId: string
  /** The card's own document (comments, screenshots), once open. */
  cardDoc: CardStore | undefined
  presence: PresenceStore
  onClose: () => void
}) {
  const ws = useWorkspace()
  const { store, org, canAdmin, members, unapplied } = ws
  const card = useCard(store, taskId)
  const _columns = useColumns(store)
  const _projects = useProjects(store)
  const _allTags = useTags(store)
  const viewers = usePresence(presence, `card:${taskId}`, (p) => p.onCard(taskId))
  const titleId = useId()
  // The description lives in the card's own document (version 3): editable once it is open.
  const text = cardDoc ? cardMaps(cardDoc.doc).description : undefined
  const descriptionText = useYTextString(text)
  // Read as Markdown; written in the editor, which opens by itself on an empty description.
  const [writing, setWriting] = useState<boolean>()
  // Once written in, the editor stays (hidden under the preview), so its undo history does.
  const [keptEditor, setKeptEditor] = useState(false)
  const cardStatus = useCardDocStatus(cardDoc)
  useScrollToMatch(useQueryParam('at'), cardStatus?.synced === true || cardStatus?.loaded === true)
  useEffect(() => {
    if (!text || !cardStatus) return
    // Decided once the description is known: read when there is one, write when empty.
    const empty = descriptionText.length === 0
    if (!empty && (cardStatus.loaded || cardStatus.synced)) setWriting((w) => w ?? false)
    else if (cardStatus.synced) setWriting((w) => w ?? empty)
  }, [text, cardStatus, descriptionText])
  const [title, setTitle] = useState(card?.title ?? '')
  const [editingTitle, setEditingTitle] = useState(false)
  useEffect(() => {
    if (!editingTitle && card) setTitle(card.title)
  }, [card, editingTitle])

  if (!card) return null
  const column = store.column(card.columnId)
  const onFire = column?.onFire === true
  const locked = card.claim?.isLive === true
  const showEditor = !locked && text !== undefined && writing === true
  const _effective = effectivePriority(card.priority, onFire)

  const saveTitle = () => {
    setEditingTitle(false)
    const t = title.trim()
    if (t && t !== card.title) updateTask(store.doc, taskId, { title: t })
    else setTitle(card.title)
  }

  const run = async (what: () => Promise<unknown>, done?: string) => {
    try {
      await what()
      if (done) toast('success', done)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  const deleteCard = async () => {
    const ok = await confirmDialog({
      title: 'Delete this card?',
      message: `“${card.title}” is deleted with its comments, screenshots and claim. This cannot be undone.`,
      confirmLabel: 'Delete card',
      danger: true,
    })
    if (!ok) return
    await run(async () => {
      unapplied.forget(taskId)
      await appApi.deleteTask(org.id, taskId)
      onClose()
    }, 'Card deleted')
  }

  const forceRelease = async (claim: ClaimRecord) => {
    const ok = await confirmDialog({
      title: 'Force release the claim?',
      message: `${claim.holder} loses the card at once. Its next heartbeat or release is refused. Use this for an agent that died holding the card.`,
      confirmLabel: 'Force release',
      danger: true,
    })
    if (!ok) return
    await run(() => appApi.forceRelease(org.id, taskId), 'Claim released')
  }

  const others = (viewers ?? []).filter((v) => v.user.id !== ws.user.id)

  return (
    <div className="panel-scroll">
      <header className="panel-header">
        <span className="panel-crumb">{column?.title ?? 'No column'}</span>
        {others.length > 0 && (
          <span
            className="panel-viewers"
            title={`Also here: ${others.map((o) => o.user.name).join(', ')}`}
          >
            {others.map((o) => (
              <Avatar
                key={o.user.id}
                id={o.user.id}
                name={o.user.name}
                color={o.user.color}
                size={22}
              />
            ))}
          </span>
        )}
        <span className="header-spacer" />
        <Menu
          label="Card actions"
          trigger={<MoreIcon />}
          align="end"
          items={[
            {
              label: 'Copy link',
              icon: <LinkIcon size={14} />,
              onSelect: () => {
                void navigator.clipboard
                  ?.writeText(`${location.origin}/o/${org.id}/board?card=${taskId}`)
                  .then(() => toast('success', 'Link copied'))
              },
            },
            {
              label: 'Archive',
              icon: <ArchiveIcon size={14} />,
              disabled: locked,
              onSelect: () => {
                archiveTask(store.doc, taskId)
                toast('success', 'Card archived', {
                  label: 'Undo',
                  run: () =>
                    void appApi
                      .restoreTask(org.id, taskId)
                      .catch((e: unknown) => toast('error', describeError(e))),
                })
                onClose()
              },
            },
            {
              label: 'Delete card…',
              icon: <TrashIcon size={14} />,
              danger: true,
              onSelect: () => void deleteCard(),
            },
          ]}
        />
        <button type="button" className="icon-btn" aria-label="Close card" onClick={onClose}>
          <CloseIcon />
        </button>
      </header>

      {card.claim && (
        <ClaimDetails
          claim={card.claim}
          canRelease={canAdmin}
          onRelease={() => void forceRelease(card.claim as ClaimRecord)}
        />
      )}

      <label htmlFor={titleId} className="sr-only">
        Title
      </label>
      <textarea
        id={titleId}
        className="panel-title"
        value={title}
        rows={1}
        maxLength={LIMITS.taskTitle.max}
        readOnly={locked}
        onFocus={() => setEditingTitle(true)}
        onChange={(e) => setTitle(e.target.value.replace(/\n/g, ' '))}
        onBlur={saveTitle}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault()
            e.currentTarget.blur()
          }
          if (e.key === 'Escape') {
            e.preventDefault()
            setTitle(card.title)
            setEditingTitle(false)
            e.currentTarget.blur()
          }
        }}
      />

      <CardFields
        card={card}
        locked={locked}
        onFire={onFire}
        columnTitle={column?.title}
        run={run}
      />

      <Dependencies card={card} locked={locked} />

      <section className="panel-section" data-testid="description-section">
        <h3>
          <span id={`${titleId}-desc-label`}>Description</span>
          {text && !locked && (
            <button
              type="button"
              className="link-btn description-toggle"
              onClick={() => {
                if (showEditor) setKeptEditor(true)
                setWriting(!showEditor)
              }}
            >
              {showEditor ? 'Preview' : 'Edit description'}
            </button>
          )}
        </h3>
        {locked && card.claim && (
          <p className="description-locked small" data-testid="description-locked">
            Locked while {card.claim.holder} works on this card.
          </p>
        )}
        {!showEditor &&
          (descriptionText ? (
            <MarkdownView
              text={descriptionText}
              className="description-view"
              testId="description-view"
            />
          ) : (
            <p className="muted">{text ? 'No description' : 'Loading the description…'}</p>
          ))}
        {(showEditor || (keptEditor && !locked)) && text && cardDoc && (
          <DescriptionEditor
            hidden={!showEditor}
            text={text}
            awareness={cardDoc.live.awareness}
            locked={locked}
            max={LIMITS.taskDescription.max}
            labelledBy={`${titleId}-desc-label`}
          />
        )}
      </section>

      {cardDoc ? (
        <>
          <Screenshots card={cardDoc} />
          <Comments card={cardDoc} />
        </>
      ) : (
        <p className="muted">Loading comments…</p>
      )}

      <CardHistory
        taskId={taskId}
        version={`${card.updatedAt}|${card.columnId}|${card.claim?.status ?? ''}|${card.claim?.updatedAt ?? ''}|${card.stats.commentCount}|${card.stats.imageCount}|${card.title}`}
      />

      <footer className="panel-foot muted small">
        Created {relativeTime(card.createdAt)}
        {card.createdByEmail && ` by ${authorOf(card.createdByEmail, members.members)}`} · updated{' '}
        {relativeTime(card.updatedAt)}
      </footer>
    </div>
  )
}
