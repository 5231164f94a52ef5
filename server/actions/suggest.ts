/**
 * The names nearest to one that does not exist, for errors that teach: `create_card`
 * points to create_task, `labels` to tags. Words the specification spells differently
 * from what people type are read as the specification's first (a card is a task, a label
 * a tag), then names are compared by edit distance.
 */
const SYNONYMS: Record<string, string> = {
  card: 'task',
  cards: 'tasks',
  ticket: 'task',
  tickets: 'tasks',
  issue: 'task',
  issues: 'tasks',
  label: 'tag',
  labels: 'tags',
  lane: 'column',
  lanes: 'columns',
  list: 'column',
  thought: 'node',
  thoughts: 'nodes',
  mindmap: 'map',
  remove: 'delete',
  add: 'create',
  new: 'create',
  edit: 'update',
  modify: 'update',
  fetch: 'get',
  read: 'get',
  assign: 'claim',
  unclaim: 'release',
  body: 'description',
  name: 'title',
}

/** Whole names (in our words) whose nearest action is not the nearest spelling. */
const PHRASES: Record<string, string> = {
  delete_task: 'archive_task',
  get_tasks: 'get_board',
  list_tasks: 'get_board',
  get_columns: 'list_columns',
  create_tag: 'set_task_tags',
  create_tags: 'set_task_tags',
  set_tags: 'set_task_tags',
  update_tags: 'set_task_tags',
  claim_next: 'claim_task',
  heartbeat: 'heartbeat_task',
  list_changes: 'get_changes',
  get_maps: 'list_maps',
}

/** Lower-case words of a snake_case or camelCase name, synonyms read as ours. */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[_\s-]+/)
    .filter(Boolean)
    .map((w) => SYNONYMS[w] ?? w)
    .join('_')
}

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row[j] = Math.min(
        (previous[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      )
    }
    previous = row
  }
  return previous[b.length] as number
}

/** Up to `max` candidates close to `name`, nearest first; none when nothing is close. */
export function nearest(name: string, candidates: readonly string[], max = 3): string[] {
  const wanted = words(name)
  const limit = Math.max(2, Math.floor(wanted.length / 3))
  const phrase = PHRASES[wanted]
  const first = phrase && candidates.includes(phrase) ? [phrase] : []
  const close = candidates
    .filter((c) => c !== phrase)
    .map((c) => ({ c, d: distance(wanted, words(c)) }))
    .filter(({ d }) => d <= limit)
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .map(({ c }) => c)
  return [...first, ...close].slice(0, max)
}

/** " (did you mean x or y?)", or nothing. */
export function didYouMean(name: string, candidates: readonly string[], quote = ''): string {
  const near = nearest(name, candidates)
  if (near.length === 0) return ''
  const q = near.map((n) => `${quote}${n}${quote}`)
  const list = q.length === 1 ? q[0] : `${q.slice(0, -1).join(', ')} or ${q.at(-1)}`
  return ` (did you mean ${list}?)`
}
