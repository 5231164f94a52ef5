import type { boardActions } from '../../shared/actions/board.ts'
import * as read from './board-read.ts'
import * as columns from './columns.ts'
import * as comments from './comments.ts'
import type { HandlerMap } from './context.ts'
import * as dependencies from './dependencies.ts'
import { search_tasks } from './search.ts'
import * as tasks from './tasks.ts'

export const boardHandlers: HandlerMap<keyof typeof boardActions> = {
  whoami: read.whoami,
  get_board: read.get_board,
  search_tasks,
  get_task: read.get_task,
  list_columns: read.list_columns,
  list_projects: read.list_projects,
  create_task: tasks.create_task,
  update_task: tasks.update_task,
  set_task_tags: tasks.set_task_tags,
  set_task_dependencies: dependencies.set_task_dependencies,
  move_task: tasks.move_task,
  archive_task: tasks.archive_task,
  add_comment: comments.add_comment,
  update_comment: comments.update_comment,
  delete_comment: comments.delete_comment,
  create_column: columns.create_column,
  rename_column: columns.rename_column,
  delete_column: columns.delete_column,
}
