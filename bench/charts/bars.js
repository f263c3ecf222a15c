'use strict'
// The one kind of panel the charts draw: horizontal bars with their values, marks and whiskers.
const { HALO, num, svgRect: rect, svgText: text } = require('@sluice/cli')
const { wrap } = require('./layout')
const { BAR, BAR_GAP, COLORS, FAINT, FIT_BOLD, FIT_CHAR } = require('./style')

/**
 * A horizontal bar panel at (x, y): one row per entry, `segments` stacked left to right, the
 * row's `value` text right of its bar, dashed `marks` (baseline, ceiling, limit) across all
 * rows, and `whiskers` (a row's [low, high]) as a line with end caps over its bar. The title
 * wraps to the panel's width; `titleLines` reserves as many lines as the tallest title of the
 * panels beside it, so their rows line up. The bars are scaled so the longest value text still
 * ends inside the panel. `labelWidth` 0 draws no row labels (a panel beside another that has
 * them). Returns { svg, height }.
 */
function barPanel({ x, y, width, labelWidth, title, rows, marks = [], max, titleLines = 1 }) {
  const parts = []
  const lines = title ? wrap(title, width, FIT_BOLD) : []
  const top = y + (title ? 16 + 13 * (Math.max(lines.length, titleLines) - 1) : 0)
  const rowsHeight = rows.reduce((h, r) => h + (r.gapBefore ?? 0) + BAR + BAR_GAP, 0)
  const bottom = top + 4 + rowsHeight - BAR_GAP + 3
  lines.forEach((l, i) => parts.push(text(x, y + 10 + 13 * i, l, 'font-weight="bold"')))
  const barLeft = x + labelWidth
  const total = (r) => r.segments.reduce((s, seg) => s + seg.value, 0)
  const reach = (r) => Math.max(total(r), r.whisker?.[1] ?? 0)
  const scale = max ?? Math.max(...rows.map(reach), ...marks.map((m) => m.value)) * 1.02
  // The widest bar area at which every row's value text, 4 px right of its bar, still fits.
  const room = x + width - barLeft
  const barWidth = Math.max(
    40,
    Math.min(
      room,
      ...rows.map((r) =>
        reach(r) > 0 ? (room - 4 - (r.value ?? '').length * FIT_CHAR) / (reach(r) / scale) : room,
      ),
    ),
  )
  const at = (v) => barLeft + (scale > 0 ? (v / scale) * barWidth : 0)
  const values = [] // drawn last, over the marks
  let rowY = top + 4
  for (const row of rows) {
    rowY += row.gapBefore ?? 0
    if (labelWidth > 0 && row.label) {
      parts.push(text(barLeft - 6, rowY + BAR - 2, row.label, 'text-anchor="end"'))
    }
    let from = 0
    for (const seg of row.segments) {
      const w = at(from + seg.value) - at(from)
      if (w > 0) {
        const faint = seg.faint ? `fill-opacity="${FAINT}"` : ''
        parts.push(rect(at(from), rowY, Math.max(w, 0.5), BAR, seg.color, faint))
      }
      from += seg.value
    }
    if (row.whisker) parts.push(whisker(at(row.whisker[0]), at(row.whisker[1]), rowY + BAR / 2))
    const end = Math.max(at(from), row.whisker ? at(row.whisker[1]) : 0)
    if (row.value) values.push(text(end + 4, rowY + BAR - 2, row.value, HALO))
    rowY += BAR + BAR_GAP
  }
  parts.push(
    `<line x1="${num(barLeft)}" y1="${num(top)}" x2="${num(barLeft)}" y2="${num(bottom)}" stroke="${COLORS.text}"/>`,
  )
  for (const mark of marks) {
    const mx = at(mark.value)
    parts.push(
      `<line x1="${num(mx)}" y1="${num(top)}" x2="${num(mx)}" y2="${num(bottom)}" stroke="${COLORS.text}" stroke-dasharray="4 3"/>`,
      text(mx, bottom + 11, mark.label, 'text-anchor="middle" font-size="9"'),
    )
  }
  parts.push(...values)
  return { svg: parts.join('\n'), height: bottom - y + (marks.length ? 14 : 0) }
}

/** A range from x1 to x2 at height y: a dark line with end caps, over the bar it belongs to. */
function whisker(x1, x2, y) {
  const cap = (x) => `M${num(x)} ${num(y - 4)}v8`
  return `<path class="spread" d="M${num(x1)} ${num(y)}H${num(x2)}${cap(x1)}${cap(x2)}" stroke="${COLORS.text}" stroke-width="1.5" fill="none"/>`
}

module.exports = { barPanel }
