import { Avatar } from '../ui/avatar.tsx'
import { useWorkspace } from '../workspace.tsx'
import { type PresenceStore, usePresence } from './presence.ts'

/** Who else has the board open, as avatars; each says which card its person is viewing. */
export function PresenceBar({ presence }: { presence: PresenceStore }) {
  const people = usePresence(presence, 'people', (p) => p.everyone())
  const { store } = useWorkspace()
  const unique = [...new Map(people.map((p) => [p.user.id, p])).values()]
  if (unique.length === 0) return null
  return (
    <ul className="presence" aria-label="Also on this board">
      {unique.slice(0, 6).map((p) => {
        const card = p.openCard ? store.card(p.openCard) : undefined
        const doing = card
          ? `${p.user.name}, viewing “${card.title}”`
          : `${p.user.name}, on the board`
        return (
          <li key={p.user.id} className="presence-item">
            <Avatar
              id={p.user.id}
              name={p.user.name}
              color={p.user.color}
              size={26}
              title={doing}
            />
          </li>
        )
      })}
      {unique.length > 6 && <li className="presence-item presence-more">+{unique.length - 6}</li>}
    </ul>
  )
}
