'use strict'
// A chart's legend: what each colour means, in one line under the subtitle.
const { svgRect: rect, svgText: text } = require('@sluice/cli')
const { FAINT, FIT_CHAR } = require('./style')

/** Coloured squares and their meanings, in one line from (x, y). Returns the svg. */
function legend(x, y, entries) {
  const parts = []
  let at = x
  for (const e of entries) {
    parts.push(
      rect(at, y - 9, 10, 10, e.color, e.faint ? `fill-opacity="${FAINT}"` : ''),
      text(at + 14, y, e.label),
    )
    at += 14 + e.label.length * FIT_CHAR + 16
  }
  return parts.join('\n')
}

/** A figure's body: its panels' svg, then the legend of `entries` at `legendY`. */
function withLegend(panels, legendY, entries) {
  return [...panels, legend(8, legendY, entries)].join('\n')
}

module.exports = { legend, withLegend }
