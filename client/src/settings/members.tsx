import { type FormEvent, useState } from 'react'
import { appApi, type Member, type MemberRole } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { navigate } from '../router.tsx'
import { session } from '../session.ts'
import { Avatar } from '../ui/avatar.tsx'
import { CopyButton } from '../ui/copy-button.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { formatDate, useSubmit } from './admin-parts.tsx'

const ROLE_TEXT: Record<MemberRole, string> = {
  owner: 'Owner',
  admin: 'Admin',
  member: 'Member',
}

export function Members() {
  const { org, user, members, canAdmin } = useWorkspace()
  const [invite, setInvite] = useState<{ link: string; email: string; role: string }>()
  const [busy, submit] = useSubmit()

  const sendInvite = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const data = new FormData(form)
    await submit(async () => {
      const res = await appApi.invite(
        org.id,
        String(data.get('email')),
        data.get('role') === 'admin' ? 'admin' : 'member',
      )
      setInvite({
        link: `${location.origin}/invite/${res.invite.token}`,
        email: res.invite.email,
        role: res.invite.role,
      })
      form.reset()
      await members.reload()
    })
  }

  const changeRole = async (m: Member, role: MemberRole) => {
    try {
      await appApi.setMemberRole(org.id, m.id, role)
      toast('success', `${m.name} is now ${ROLE_TEXT[role].toLowerCase()}`)
      await members.reload()
      if (m.id === user.id) await session.refresh()
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  const remove = async (m: Member) => {
    const self = m.id === user.id
    const ok = await confirmDialog({
      title: self ? `Leave ${org.name}?` : `Remove ${m.name}?`,
      message: self
        ? 'You lose access to its board and mind maps until someone invites you again.'
        : `${m.name} (${m.email}) loses access to ${org.name} at once.`,
      confirmLabel: self ? 'Leave' : 'Remove',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.removeMember(org.id, m.id)
      if (self) {
        await session.refresh()
        navigate('/')
      } else {
        toast('success', `${m.name} was removed`)
        await members.reload()
      }
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  const roleOptions = (m: Member): MemberRole[] =>
    org.role === 'owner'
      ? ['owner', 'admin', 'member']
      : m.role === 'owner'
        ? ['owner']
        : ['admin', 'member']

  return (
    <div className="settings-stack">
      <section className="settings-card" aria-labelledby="members-heading">
        <h2 id="members-heading">Members</h2>
        <table className="table table-stack" data-testid="members-table">
          <thead>
            <tr>
              <th scope="col">Person</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.members.map((m) => (
              <tr key={m.id}>
                <td data-label="Person">
                  <span className="person">
                    <Avatar id={m.id} name={m.name} size={28} />
                    <span>
                      <span className="person-name">
                        {m.name}
                        {m.id === user.id && <span className="muted"> (you)</span>}
                      </span>
                      <span className="muted small">{m.email}</span>
                    </span>
                  </span>
                </td>
                <td data-label="Role">
                  {canAdmin && m.id !== user.id && roleOptions(m).length > 1 ? (
                    <select
                      aria-label={`Role of ${m.name}`}
                      value={m.role}
                      onChange={(e) => void changeRole(m, e.target.value as MemberRole)}
                    >
                      {roleOptions(m).map((r) => (
                        <option key={r} value={r}>
                          {ROLE_TEXT[r]}
                        </option>
                      ))}
                    </select>
                  ) : (
                    <span className={`badge role-badge-${m.role}`}>{ROLE_TEXT[m.role]}</span>
                  )}
                </td>
                <td className="muted small" data-label="Joined">
                  {formatDate(m.joinedAt)}
                </td>
                <td className="actions-cell">
                  {(m.id === user.id ||
                    (canAdmin && (m.role !== 'owner' || org.role === 'owner'))) && (
                    <button
                      type="button"
                      className="btn btn-ghost btn-small"
                      onClick={() => void remove(m)}
                    >
                      {m.id === user.id ? 'Leave' : 'Remove'}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      {canAdmin && (
        <section className="settings-card" aria-labelledby="invite-heading">
          <h2 id="invite-heading">Invite someone</h2>
          <form className="inline-form" onSubmit={sendInvite}>
            <Labeled label="Email" className="grow">
              {(p) => (
                <input
                  {...p}
                  name="email"
                  type="email"
                  required
                  placeholder="teammate@example.com"
                />
              )}
            </Labeled>
            <Labeled label="Role">
              {(p) => (
                <select {...p} name="role" defaultValue="member">
                  <option value="member">Member</option>
                  <option value="admin">Admin</option>
                </select>
              )}
            </Labeled>
            <button type="submit" className="btn btn-primary" disabled={busy}>
              Create invite
            </button>
          </form>
          {invite && (
            <div className="secret-box" role="status">
              <p>
                Send this link to <strong>{invite.email}</strong> ({invite.role}). It works once,
                for 14 days, and only for that address.
              </p>
              <div className="secret-row">
                <code data-testid="invite-link">{invite.link}</code>
                <CopyButton text={invite.link} label="Copy link" />
              </div>
            </div>
          )}
          {members.invites.length > 0 && (
            <>
              <h3>Pending invites</h3>
              <ul className="plain-list">
                {members.invites.map((i) => (
                  <li key={`${i.email}-${i.createdAt}`}>
                    <span>{i.email}</span>
                    <span className="badge">{i.role}</span>
                    <span className="muted small">expires {formatDate(i.expiresAt)}</span>
                  </li>
                ))}
              </ul>
            </>
          )}
        </section>
      )}
    </div>
  )
}
