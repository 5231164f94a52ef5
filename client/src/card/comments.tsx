import { useState } from 'react'
import type { StoredComment } from '../../../shared/card-doc.ts'
import { LIMITS } from '../../../shared/constants.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { addComment, editComment } from '../board/board-actions.ts'
import { Avatar } from '../ui/avatar.tsx'
import { BotIcon } from '../ui/icons.tsx'
import { MarkdownView } from '../ui/markdown-view.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { type CardStore, useCardComments } from './card-store.ts'

/** Robot accounts of API keys write as key-<id>@agents.<host> (docs/design.md). */
export const ROBOT_EMAIL = /^key-[0-9a-f-]+@agents\./i

export function relativeTime(iso: string): string {
  const t = Date.parse(iso)
  if (!Number.isFinite(t)) return ''
  const s = Math.round((Date.now() - t) / 1000)
  if (s < 45) return 'just now'
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`
  if (s < 7 * 86_400) return `${Math.round(s / 86_400)} d ago`
  return new Date(t).toLocaleDateString()
}

/**
 * Who wrote a comment, for the eye: an agent names itself (agentName); a key that sent no
 * name is still a program; anyone else is a person, by name when they are a member.
 */
function author(c: StoredComment, members: readonly { email: string; name: string; id: string }[]) {
  if (c.agentName) return { kind: 'agent' as const, name: c.agentName }
  if (ROBOT_EMAIL.test(c.authorEmail))
    return { kind: 'agent' as const, name: 'API key (no agent name)' }
  const m = members.find((x) => x.email === c.authorEmail)
  return { kind: 'person' as const, name: m?.name ?? c.authorEmail, id: m?.id ?? c.authorEmail }
}

export function Comments({ card }: { card: CardStore }) {
  const { user, org, members } = useWorkspace()
  const comments = useCardComments(card)
  const taskId = card.taskId
  const [body, setBody] = useState('')
  const [editing, setEditing] = useState<string>()
  const [draft, setDraft] = useState('')

  const submit = () => {
    const text = body.trim()
    if (!text) return
    addComment(card.doc, { taskId, body: text, email: user.email })
    setBody('')
  }

  const remove = async (c: StoredComment) => {
    const ok = await confirmDialog({
      title: 'Delete comment?',
      message: 'The comment is deleted permanently.',
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.deleteComment(org.id, c.id)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  return (
    <section className="panel-section" aria-labelledby="comments-heading">
      <h3 id="comments-heading">
        Comments <span className="muted">{comments.length}</span>
      </h3>
      <ol className="comments">
        {comments.map((c) => {
          const who = author(c, members.members)
          const mine = who.kind === 'person' && c.authorEmail === user.email && !c.agentName
          return (
            <li
              key={c.id}
              className={`comment comment-${who.kind}`}
              data-author-kind={who.kind}
              data-comment-id={c.id}
            >
              <div className="comment-head">
                {who.kind === 'agent' ? (
                  <span className="agent-avatar" aria-hidden="true">
                    <BotIcon size={13} />
                  </span>
                ) : (
                  <Avatar id={who.id} name={who.name} size={22} />
                )}
                <span className="comment-author">{who.name}</span>
                {who.kind === 'agent' && <span className="badge badge-agent">Agent</span>}
                <time
                  className="muted small"
                  dateTime={c.createdAt}
                  title={new Date(c.createdAt).toLocaleString()}
                >
                  {relativeTime(c.createdAt)}
                </time>
                {c.editedAt && (
                  <span
                    className="muted small"
                    title={`Edited ${new Date(c.editedAt).toLocaleString()}`}
                  >
                    (edited)
                  </span>
                )}
                {mine && editing !== c.id && (
                  <span className="comment-actions">
                    <button
                      type="button"
                      className="link-btn"
                      onClick={() => {
                        setEditing(c.id)
                        setDraft(c.body)
                      }}
                    >
                      Edit
                    </button>
                    <button
                      type="button"
                      className="link-btn danger"
                      onClick={() => void remove(c)}
                    >
                      Delete
                    </button>
                  </span>
                )}
              </div>
              {editing === c.id ? (
                <form
                  className="comment-edit"
                  onSubmit={(e) => {
                    e.preventDefault()
                    if (draft.trim()) editComment(card.doc, c.id, draft.trim())
                    setEditing(undefined)
                  }}
                >
                  <textarea
                    aria-label="Edit your comment"
                    value={draft}
                    maxLength={LIMITS.commentBody.max}
                    onChange={(e) => setDraft(e.target.value)}
                    // biome-ignore lint/a11y/noAutofocus: editing starts because the person asked
                    autoFocus
                    onKeyDown={(e) => {
                      if (e.key === 'Escape') setEditing(undefined)
                    }}
                  />
                  <div className="composer-actions">
                    <button
                      type="submit"
                      className="btn btn-primary btn-small"
                      disabled={!draft.trim()}
                    >
                      Save
                    </button>
                    <button
                      type="button"
                      className="btn btn-ghost btn-small"
                      onClick={() => setEditing(undefined)}
                    >
                      Cancel
                    </button>
                  </div>
                </form>
              ) : (
                <MarkdownView text={c.body} className="comment-body" />
              )}
            </li>
          )
        })}
      </ol>
      <form
        className="comment-composer"
        onSubmit={(e) => {
          e.preventDefault()
          submit()
        }}
      >
        <textarea
          aria-label="Write a comment"
          placeholder="Write a comment… (Ctrl+Enter to send)"
          value={body}
          maxLength={LIMITS.commentBody.max}
          onChange={(e) => setBody(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault()
              submit()
            }
          }}
        />
        <button type="submit" className="btn btn-primary btn-small" disabled={!body.trim()}>
          Comment
        </button>
      </form>
    </section>
  )
}
