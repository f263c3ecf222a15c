'use strict'
// The charts with a panel per framework: HTTP requests per second and instructions per request.
const { fmt } = require('../../lib')
const { barPanel } = require('../bars')
const { capital, measured, span, times } = require('../format')
const { documentSvg, header, labelWidthOf } = require('../layout')
const { legend } = require('../legend')
const { COLORS, variantColor } = require('../style')

/**
 * What the HTTP chart cannot show: http.json keeps medians only, no per-round spread, so a
 * limiter's bar past its no-limiter line is the shared machine's noise; say so, naming them.
 */
function noiseNote(frameworks) {
  const faster = Object.entries(frameworks).flatMap(([name, f]) =>
    f.rows
      .filter((r) => r.variant !== 'none' && r.ratio > 1)
      .map((r) => `${capital(name)} ${r.label}`),
  )
  return (
    'Medians only: the result file keeps no per-round spread' +
    (faster.length > 0
      ? `, so a bar past its no-limiter line (${faster.join(', ')}) is noise, not a speed-up.`
      : '.') +
    ' bench-instructions.svg shows a steadier measure with its spread.'
  )
}

/** The frameworks' legend: the server without a limiter (`neutral`), Sluice, the peer, and the rejecting path. */
function frameworkLegend(neutral) {
  return [
    { color: COLORS.neutral, label: neutral },
    { color: COLORS.sluice, label: 'Sluice' },
    { color: COLORS.peer, label: "the framework's popular limiter" },
    { color: COLORS.sluice, faint: true, label: 'faint: rejecting path (all 429)' },
  ]
}

/**
 * One bar panel per framework, stacked under the header and legend: the HTTP and the
 * instructions charts. `panelOf(name, f)` gives a panel's { title, rows, marks, summary }.
 */
function frameworkChart({ frameworks, title, subtitle, legendEntries, panelOf }) {
  const width = 760
  const labelWidth = labelWidthOf(
    Object.values(frameworks).flatMap((f) => f.rows.map((r) => r.label)),
  )
  const head = header(width, title, subtitle)
  const parts = [legend(8, head.legendY, legendEntries)]
  const summary = []
  let y = head.top
  for (const [name, f] of Object.entries(frameworks)) {
    const { summary: said, ...panelOptions } = panelOf(name, f)
    const panel = barPanel({ x: 8, y, width: width - 16, labelWidth, ...panelOptions })
    parts.push(panel.svg)
    y += panel.height + 14
    summary.push(said)
  }
  return documentSvg({
    width,
    height: y,
    head,
    description: summary.join(' '),
    body: parts.join('\n'),
  })
}

module.exports = {
  http(record) {
    const { frameworks, connections, seconds, rounds, tries = 1 } = record.data
    return frameworkChart({
      frameworks,
      title: 'HTTP requests per second, median of the rounds',
      subtitle:
        measured(
          record,
          `autocannon, ${connections} connections, best of ${tries} x ${seconds} s, ${rounds} rounds; load generator, server and Redis share the cores`,
        ) + `. ${noiseNote(frameworks)}`,
      legendEntries: frameworkLegend('no limiter'),
      panelOf(name, f) {
        const cost = (variant) => {
          const row = f.rows.find((r) => r.variant === variant)
          return `${Math.round((1 - row.ratio) * 100)}%`
        }
        const title = `${capital(name)}: Sluice memory costs ${cost('sluice-memory')} of the baseline, ${f.peer.memory} ${cost('peer-memory')}`
        const baseline = f.rows.find((r) => r.variant === 'none')
        return {
          title,
          rows: f.rows.map((r) => ({
            label: r.label,
            value: `${(r.rps / 1000).toFixed(1)}k`,
            segments: [
              {
                value: r.rps,
                color: variantColor(r.variant),
                faint: r.variant.endsWith('-reject'),
              },
            ],
          })),
          marks: [{ value: baseline.rps, label: 'no limiter' }],
          summary: `${title}; ${f.rows.map((r) => `${r.label} ${fmt(r.rps)} req/s`).join(', ')}.`,
        }
      },
    })
  },

  instructions(record) {
    const { frameworks, rounds } = record.data
    return frameworkChart({
      frameworks,
      title: 'Instructions per HTTP request, x the server without a limiter (lower is better)',
      subtitle: measured(
        record,
        `bar: median of ${rounds} round${rounds === 1 ? '' : 's'}; whisker: lowest to highest round, each round against its own no-limiter run; outside V8's compiler and garbage collector`,
      ),
      legendEntries: frameworkLegend('no limiter, headers only'),
      panelOf(name, f) {
        const none = f.rows.find((r) => r.variant === 'none')
        // Each round's ratio to the no-limiter run of the same round, as the median is taken.
        const spread = (r) => {
          const ratios = r.runs.map((v, i) => v / (none.runs[i] ?? none.instructions))
          return [Math.min(...ratios), Math.max(...ratios)]
        }
        return {
          title: `${capital(name)}: ${fmt(none.instructions)} instructions per request without a limiter`,
          rows: f.rows.map((r) => {
            const ranged = r.variant !== 'none' && Array.isArray(r.runs) && Array.isArray(none.runs)
            const whisker = ranged ? spread(r) : undefined
            return {
              label: r.label,
              value: whisker ? `${times(r.ratio)} (rounds ${span(whisker)})` : times(r.ratio),
              whisker,
              segments: [
                {
                  value: r.ratio,
                  color: variantColor(r.variant),
                  faint: r.variant.endsWith('-reject'),
                },
              ],
            }
          }),
          marks: [{ value: 1, label: 'no limiter' }],
          summary: `${capital(name)}: ${f.rows.map((r) => `${r.label} ${times(r.ratio)}`).join(', ')}.`,
        }
      },
    })
  },
}
