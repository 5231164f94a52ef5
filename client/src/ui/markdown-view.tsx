import { useMemo } from 'react'
import { renderMarkdown } from './markdown.ts'

/**
 * Markdown shown as HTML. The HTML comes only from renderMarkdown, which never passes raw
 * HTML, script URLs or foreign images through (ui/markdown.ts).
 */
export function MarkdownView({
  text,
  className,
  testId,
}: {
  text: string
  className?: string
  testId?: string
}) {
  const html = useMemo(() => renderMarkdown(text, location.origin), [text])
  return (
    <div
      className={`markdown${className ? ` ${className}` : ''}`}
      data-testid={testId}
      // biome-ignore lint/security/noDangerouslySetInnerHtml: renderMarkdown escapes raw HTML and drops unsafe URLs
      dangerouslySetInnerHTML={{ __html: html }}
    />
  )
}
