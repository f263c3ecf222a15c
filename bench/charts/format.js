'use strict'
// How the charts and the results section write figures and the line saying where they come from.

const measured = (record, extra) =>
  `Measured ${record.machine.date} on ${record.machine.cpus}, Node ${record.machine.node}${extra ? `; ${extra}` : ''}. Source: docs/bench/${record.name}.md`
const times = (r) => `${r.toFixed(2)}x`
const capital = (s) => s[0].toUpperCase() + s.slice(1)
/** "a-bx" (or "ax" when equal): the span of ratios, as the prose elsewhere quotes them. */
function span(values, format = (v) => v.toFixed(2)) {
  const lo = format(Math.min(...values))
  const hi = format(Math.max(...values))
  return lo === hi ? lo : `${lo}-${hi}`
}
const pct = (ratio) => `${Math.round((1 - ratio) * 100)}%`

module.exports = { measured, times, capital, span, pct }
