import * as read from '../schemas/board-read.ts'
import * as columns from '../schemas/columns.ts'
import * as comments from '../schemas/comments.ts'
import { outputs } from '../schemas/outputs.ts'
import * as tasks from '../schemas/tasks.ts'
import { spec } from './spec.ts'

/** The board actions: reading, cards, comments and columns. */
export const boardActions = {
  whoami: spec({
    input: read.whoami,
    output: outputs.whoami,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'Who am I: the organisation of this key, the key name and how much is on the board. A key of the wrong organisation still gets an empty board: check here.',
  }),
  get_board: spec({
    input: read.get_board,
    output: outputs.get_board,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'Read the board: every column, every card on it (claim, comment and image counts) and the claim activity; filters combine. A big board: summary:true, pages (limit, cursor); a long answer is the first page that fits, with nextCursor.',
  }),
  search_tasks: spec({
    input: read.search_tasks,
    output: outputs.search_tasks,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      "Find cards by their words in titles, descriptions and comments (stemmed; the last word may be a prefix), best first, in the summary form with where it matched. get_board's filters; includeArchived for archived cards.",
  }),
  get_task: spec({
    input: read.get_task,
    output: outputs.get_task,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'Read one card in full (archived too): fields, comments, attachments with short-lived links, assignees, its claim and its screenshots as images. A long thread comes as its newest comments; commentsBefore pages back.',
  }),
  list_columns: spec({
    input: read.list_columns,
    output: outputs.list_columns,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      "List columns in board order. With projectId: that project's own columns plus organisation-level ones. Move a card to the column whose projectId equals the card's.",
  }),
  list_projects: spec({
    input: read.list_projects,
    output: outputs.list_projects,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'List the projects of the organisation (projects are created by people in the app).',
  }),
  create_task: spec({
    input: tasks.create_task,
    output: outputs.create_task,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description: 'Create a card in a column; leaving priority out leaves it untriaged.',
  }),
  update_task: spec({
    input: tasks.update_task,
    output: outputs.update_task,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Update only the fields sent (title, description, projectId, type, priority; at least one). An empty string clears description, type or priority.',
  }),
  set_task_tags: spec({
    input: tasks.set_task_tags,
    output: outputs.set_task_tags,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Replace the whole tag set of a card ([] clears it). Tags are trimmed and case duplicates folded; at most 20 tags of at most 40 characters.',
  }),
  set_task_dependencies: spec({
    input: tasks.set_task_dependencies,
    output: outputs.set_task_dependencies,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Replace the cards this card waits for. It is blocked while one of them is open (on the board, not in a done column); claim_next skips it. Refused: itself, over 50, a cycle.',
  }),
  move_task: spec({
    input: tasks.move_task,
    output: outputs.move_task,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: false,
    description:
      "Move a card to a column. Choose the column whose projectId equals the card's projectId.",
  }),
  add_comment: spec({
    input: comments.add_comment,
    output: outputs.add_comment,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      "Add a comment to a card; works under anyone's claim. Without agentName it counts as a person's comment (lastCommentBy).",
  }),
  update_comment: spec({
    input: comments.update_comment,
    output: outputs.update_comment,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description:
      "Edit a comment this key wrote (403 for anyone else's). Author and timestamp are kept, editedAt is set, nobody is notified.",
  }),
  delete_comment: spec({
    input: comments.delete_comment,
    output: outputs.delete_comment,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: "Delete a comment this key wrote (403 for anyone else's). Permanent.",
  }),
  archive_task: spec({
    input: tasks.archive_task,
    output: outputs.archive_task,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Archive a card: it leaves get_board but stays readable with get_task. Idempotent: archiving again returns the original archivedAt.',
  }),
  create_column: spec({
    input: columns.create_column,
    output: outputs.create_column,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      'Create a column, appended at the end unless position is given; organisation-level unless projectId is given.',
  }),
  rename_column: spec({
    input: columns.rename_column,
    output: outputs.rename_column,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Rename a column; its cards and their positions are untouched.',
  }),
  delete_column: spec({
    input: columns.delete_column,
    output: outputs.delete_column,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Delete a column. If it holds cards (archived ones count), pass destinationColumnId to move them to its bottom in order. 409 while any card in it is actively worked.',
  }),
} as const
