'use strict'
// Draws the benchmark results in docs/bench/<part>.json (written by the bench scripts through
// lib.js writeResult) as bar charts in docs/img/bench-<part>.svg: hand-written SVG in the style
// of the simulator's pictures (packages/cli/src/simulate/svg.ts: same escaping, same Dark2
// colours, sans-serif 10 px). Every input is checked first; a missing or malformed file is
// reported with the path of the bad field and the process exits 1 (the charts of the valid
// files are still written).
// It also rewrites the results section of docs/benchmarks.md (between its results markers):
// each part's headline figures from the same files.
// Run: node bench/charts.js [part ...]  (after npm run build; BENCH_RESULTS_DIR,
// BENCH_IMG_DIR and BENCH_DOCS_FILE read and write elsewhere)
const fs = require('node:fs')
const path = require('node:path')
const { SVG_COLORS } = require('@sluice/cli')
const { fmt, resultsDir } = require('./lib')

const COLORS = {
  sluice: SVG_COLORS.admitted, // Dark2 teal
  peer: '#7570b3', // Dark2 purple
  neutral: '#999', // baselines and ceilings
  wrongAdmit: SVG_COLORS.rejected, // Dark2 orange
  wrongReject: '#e7298a', // Dark2 pink
  text: '#333',
}
const FAINT = 0.45 // fill-opacity of the rejecting-path bars
const BAR = 12
const BAR_GAP = 5
const CHAR = 5.3 // mean advance of a 10 px sans-serif character, for layout only
// Widths for fitting labels: on the wide side (DejaVu Sans, bold titles), so a label that fits
// here fits in the fonts a browser picks for sans-serif.
const FIT_CHAR = 6.1
const FIT_BOLD = 6.9
const HALO = 'stroke="#fff" stroke-width="3" paint-order="stroke"' // keeps values legible over a mark

/** As in simulate/svg.ts: every character XML gives meaning to becomes a numeric reference. */
function escapeXml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
const num = (n) => String(Math.round(n * 10) / 10)
const text = (x, y, content, attrs = '') =>
  `<text x="${num(x)}" y="${num(y)}"${attrs ? ' ' + attrs : ''}>${escapeXml(content)}</text>`

// ---------------------------------------------------------------------------------------------
// Input checks

class InputError extends Error {}

function check(condition, where, what) {
  if (!condition) throw new InputError(`${where} ${what}`)
}
const isNumber = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0
function numberAt(obj, key, where) {
  check(isNumber(obj?.[key]), `${where}.${key}`, 'must be a finite number >= 0')
  return obj[key]
}
function stringAt(obj, key, where) {
  check(typeof obj?.[key] === 'string' && obj[key] !== '', `${where}.${key}`, 'must be a string')
  return obj[key]
}
function arrayAt(obj, key, where) {
  check(Array.isArray(obj?.[key]) && obj[key].length > 0, `${where}.${key}`, 'must be a list')
  return obj[key]
}
function objectAt(obj, key, where) {
  const v = obj?.[key]
  check(typeof v === 'object' && v !== null && !Array.isArray(v), `${where}.${key}`, 'missing')
  return v
}

/** The common envelope of every result file: name, title, machine, packages, data. */
function envelope(record, name) {
  check(typeof record === 'object' && record !== null, name, 'must be an object')
  check(record.name === name, `${name}.name`, `must be "${name}"`)
  stringAt(record, 'title', name)
  const machine = objectAt(record, 'machine', name)
  for (const key of ['date', 'node', 'cpus', 'memory']) stringAt(machine, key, `${name}.machine`)
  objectAt(record, 'packages', name)
  return objectAt(record, 'data', name)
}

const checks = {
  http(data) {
    const frameworks = objectAt(data, 'frameworks', 'data')
    check(Object.keys(frameworks).length > 0, 'data.frameworks', 'must not be empty')
    for (const [name, f] of Object.entries(frameworks)) {
      const where = `data.frameworks.${name}`
      const peer = objectAt(f, 'peer', where)
      stringAt(peer, 'memory', `${where}.peer`)
      stringAt(peer, 'redis', `${where}.peer`)
      const rows = arrayAt(f, 'rows', where)
      rows.forEach((r, i) => {
        stringAt(r, 'variant', `${where}.rows[${i}]`)
        stringAt(r, 'label', `${where}.rows[${i}]`)
        for (const k of ['rps', 'ratio', 'p99', 'rejected']) numberAt(r, k, `${where}.rows[${i}]`)
      })
      // Written by runs of every variant since the results section quotes it; older files lack it.
      if (f.versusPeer !== undefined) {
        const versus = objectAt(f, 'versusPeer', where)
        numberAt(versus, 'redis', `${where}.versusPeer`)
        numberAt(versus, 'redisReject', `${where}.versusPeer`)
      }
      for (const v of ['none', 'sluice-memory', 'peer-memory']) {
        check(
          rows.some((r) => r.variant === v),
          `${where}.rows`,
          `has no "${v}" row`,
        )
      }
    }
  },
  instructions(data) {
    objectAt(data, 'requests', 'data')
    const frameworks = objectAt(data, 'frameworks', 'data')
    check(Object.keys(frameworks).length > 0, 'data.frameworks', 'must not be empty')
    for (const [name, f] of Object.entries(frameworks)) {
      const where = `data.frameworks.${name}`
      stringAt(f, 'peer', where)
      const rows = arrayAt(f, 'rows', where)
      rows.forEach((r, i) => {
        stringAt(r, 'variant', `${where}.rows[${i}]`)
        for (const k of ['instructions', 'ratio', 'total', 'compiler', 'gc'])
          numberAt(r, k, `${where}.rows[${i}]`)
      })
      for (const v of ['none', 'floor', 'sluice-memory', 'peer-memory']) {
        check(
          rows.some((r) => r.variant === v),
          `${where}.rows`,
          `has no "${v}" row`,
        )
      }
    }
  },
  core(data) {
    numberAt(data, 'keys', 'data')
    const rows = arrayAt(data, 'rows', 'data')
    rows.forEach((r, i) => {
      stringAt(r, 'name', `data.rows[${i}]`)
      check(typeof r.peer === 'boolean', `data.rows[${i}].peer`, 'must be true or false')
      for (const k of ['hot', 'insert', 'update', 'bytesPerKey']) numberAt(r, k, `data.rows[${i}]`)
    })
    check(rows.filter((r) => r.peer).length === 1, 'data.rows', 'must have exactly one peer row')
  },
  redis(data) {
    numberAt(data, 'inFlight', 'data')
    const rows = arrayAt(data, 'rows', 'data')
    rows.forEach((r, i) => {
      stringAt(r, 'name', `data.rows[${i}]`)
      check(typeof r.peer === 'boolean', `data.rows[${i}].peer`, 'must be true or false')
      numberAt(r, 'sequential', `data.rows[${i}]`)
      numberAt(r, 'inFlight', `data.rows[${i}]`)
    })
    check(rows.filter((r) => r.peer).length === 1, 'data.rows', 'must have exactly one peer row')
    const ceiling = objectAt(data, 'ceiling', 'data')
    numberAt(ceiling, 'clients50', 'data.ceiling')
    numberAt(ceiling, 'pipelined', 'data.ceiling')
    arrayAt(data, 'bytesPerKey', 'data').forEach((r, i) => {
      stringAt(r, 'name', `data.bytesPerKey[${i}]`)
      numberAt(r, 'bytes', `data.bytesPerKey[${i}]`)
    })
  },
  memcached(data) {
    arrayAt(data, 'rows', 'data').forEach((r, i) => {
      stringAt(r, 'algorithm', `data.rows[${i}]`)
      check(r.keys === 'hot' || r.keys === 'distinct', `data.rows[${i}].keys`, 'hot or distinct')
      numberAt(r, 'memcached', `data.rows[${i}]`)
      if (r.redis !== null) numberAt(r, 'redis', `data.rows[${i}]`)
    })
  },
  accuracy(data) {
    numberAt(data, 'limit', 'data')
    numberAt(data, 'windowMs', 'data')
    arrayAt(data, 'totals', 'data').forEach((r, i) => {
      const where = `data.totals[${i}]`
      stringAt(r, 'algorithm', where)
      for (const k of [
        'wronglyAdmittedPct',
        'wronglyRejectedPct',
        'misclassifiedPct',
        'worstWindowAdmitted',
        'worstWindowPassed',
      ]) {
        numberAt(r, k, where)
      }
      check(r.misclassifiedPct <= 100, `${where}.misclassifiedPct`, 'must be a percentage')
    })
  },
}

// ---------------------------------------------------------------------------------------------
// Drawing

/** Splits `content` into lines of at most `width` px at `char` px per character. */
function wrap(content, width, char = CHAR) {
  const lines = []
  let line = ''
  for (const word of content.split(' ')) {
    if (line && (line.length + 1 + word.length) * char > width) {
      lines.push(line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  lines.push(line)
  return lines
}

/** How many lines a panel title takes in a panel `width` px wide. */
const titleLinesOf = (title, width) => wrap(title, width, FIT_BOLD).length

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
        parts.push(
          `<rect x="${num(at(from))}" y="${num(rowY)}" width="${num(Math.max(w, 0.5))}" height="${BAR}" fill="${seg.color}"${seg.faint ? ` fill-opacity="${FAINT}"` : ''}/>`,
        )
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

/** Coloured squares and their meanings, in one line from (x, y). Returns the svg. */
function legend(x, y, entries) {
  const parts = []
  let at = x
  for (const e of entries) {
    parts.push(
      `<rect x="${num(at)}" y="${num(y - 9)}" width="10" height="10" fill="${e.color}"${e.faint ? ` fill-opacity="${FAINT}"` : ''}/>`,
      text(at + 14, y, e.label),
    )
    at += 14 + e.label.length * FIT_CHAR + 16
  }
  return parts.join('\n')
}

const labelWidthOf = (labels) => Math.ceil(Math.max(...labels.map((l) => l.length)) * CHAR) + 10

/** Title and subtitle (wrapped to the width); `bottom` is where the legend line goes. */
function header(width, title, subtitle) {
  const lines = wrap(subtitle, width - 16)
  const svg = [
    text(8, 18, title, 'font-size="13" font-weight="bold"'),
    ...lines.map((l, i) => text(8, 33 + 13 * i, l, 'fill="#666"')),
  ].join('\n')
  const bottom = 33 + 13 * (lines.length - 1)
  return { svg, title, legendY: bottom + 18, top: bottom + 30 }
}

/** A standalone SVG document: the header, the content, a description for screen readers. */
function documentSvg({ width, height, head, description, body }) {
  return (
    [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${num(height)}" viewBox="0 0 ${width} ${num(height)}" role="img" aria-label="${escapeXml(head.title)}" font-family="sans-serif" font-size="10" fill="${COLORS.text}">`,
      `<title>${escapeXml(head.title)}</title>`,
      `<desc>${escapeXml(description)}</desc>`,
      `<rect width="${width}" height="${num(height)}" fill="#fff"/>`,
      head.svg,
      body,
      '</svg>',
    ].join('\n') + '\n'
  )
}

const measured = (record, extra) =>
  `Measured ${record.machine.date} on ${record.machine.cpus}, Node ${record.machine.node}${extra ? `; ${extra}` : ''}. Source: docs/bench/${record.name}.md`
const times = (r) => `${r.toFixed(2)}x`
const capital = (s) => s[0].toUpperCase() + s.slice(1)
/** Sluice's variants teal, the peer's purple, the baselines grey. */
const variantColor = (variant) =>
  variant.startsWith('sluice')
    ? COLORS.sluice
    : variant.startsWith('peer')
      ? COLORS.peer
      : COLORS.neutral

/** A 429's instructions beside an admitted request's, Sluice's and the peer's (older files: none). */
function rejecting(f) {
  const row = (variant) => f.rows.find((r) => r.variant === variant)
  if (row('sluice-memory-reject') === undefined || row('peer-memory-reject') === undefined)
    return '.'
  const ratio = (who) =>
    (row(`${who}-memory-reject`).instructions / row(`${who}-memory`).instructions).toFixed(2)
  const own = (variant, floor) =>
    `${((row(variant).instructions - row(floor).instructions) / 1000).toFixed(1)}k`
  const beyondFloor =
    row('floor-reject') === undefined
      ? ''
      : `; beyond the least its response costs (the floor rows), Sluice's own work is ${own('sluice-memory', 'floor')} instructions admitting and ${own('sluice-memory-reject', 'floor-reject')} rejecting`
  return `; a 429 costs ${ratio('sluice')}x an admitted request's instructions (${f.peer}: ${ratio('peer')}x)${beyondFloor}.`
}

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

const charts = {
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
      legendEntries: [
        { color: COLORS.neutral, label: 'no limiter' },
        { color: COLORS.sluice, label: 'Sluice' },
        { color: COLORS.peer, label: "the framework's popular limiter" },
        { color: COLORS.sluice, faint: true, label: 'faint: rejecting path (all 429)' },
      ],
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
      legendEntries: [
        { color: COLORS.neutral, label: 'no limiter, headers only' },
        { color: COLORS.sluice, label: 'Sluice' },
        { color: COLORS.peer, label: "the framework's popular limiter" },
        { color: COLORS.sluice, faint: true, label: 'faint: rejecting path (all 429)' },
      ],
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

  core(record) {
    const { rows, keys } = record.data
    const peer = rows.find((r) => r.peer)
    const width = 820
    const labelWidth = labelWidthOf(rows.map((r) => r.name))
    const panelWidth = (width - 16 - labelWidth) / 3
    const color = (r) => (r.peer ? COLORS.peer : COLORS.sluice)
    const head = header(
      width,
      'In-process decisions per second and memory per key: Sluice MemoryStore',
      measured(record, 'every request admitted; beside each bar: ratio to the peer'),
    )
    const panels = [
      ['hot key: decisions/s', 'hot', (v) => fmt(v)],
      [`${fmt(keys)} keys, second pass: decisions/s`, 'update', (v) => fmt(v)],
      ['heap bytes per key (lower is better)', 'bytesPerKey', (v) => `${v.toFixed(0)} B`],
    ]
    const titleLines = Math.max(...panels.map(([title]) => titleLinesOf(title, panelWidth - 8)))
    const drawn = panels.map(([title, key, format], i) =>
      barPanel({
        x: 8 + (i === 0 ? 0 : labelWidth + i * panelWidth),
        y: head.top,
        width: i === 0 ? labelWidth + panelWidth - 8 : panelWidth - 8,
        labelWidth: i === 0 ? labelWidth : 0,
        title,
        titleLines,
        rows: rows.map((r) => ({
          label: r.name,
          value: r.peer ? format(r[key]) : `${format(r[key])}, ${times(r[key] / peer[key])}`,
          segments: [{ value: r[key], color: color(r) }],
        })),
      }),
    )
    const height = head.top + Math.max(...drawn.map((p) => p.height)) + 10
    return documentSvg({
      width,
      height,
      head,
      description: rows
        .map(
          (r) =>
            `${r.name}: ${fmt(r.hot)} hot-key decisions/s, ${fmt(r.update)}/s over ${fmt(keys)} keys, ${r.bytesPerKey.toFixed(0)} B per key.`,
        )
        .join(' '),
      body: [
        drawn.map((p) => p.svg).join('\n'),
        legend(8, head.legendY, [
          { color: COLORS.sluice, label: 'Sluice' },
          { color: COLORS.peer, label: 'rate-limiter-flexible' },
        ]),
      ].join('\n'),
    })
  },

  redis(record) {
    const { rows, ceiling, bytesPerKey, inFlight } = record.data
    const peer = rows.find((r) => r.peer)
    const width = 760
    const ceilingLabel = 'raw ceiling: EVALSHA return 1, 50 clients'
    const labelWidth = labelWidthOf([...rows.map((r) => r.name), ceilingLabel])
    const head = header(
      width,
      'Redis store: decisions per second and bytes per key',
      measured(
        record,
        `one Node process, one local redis-server; pipelined ceiling (-P ${inFlight}) ${fmt(ceiling.pipelined)}/s not drawn`,
      ),
    )
    const speed = barPanel({
      x: 8,
      y: head.top,
      width: width - 16,
      labelWidth,
      title: `decisions/s, ${inFlight} in flight, auto-pipelined (beside each bar: ratio to rate-limiter-flexible)`,
      rows: [
        ...rows.map((r) => ({
          label: r.name,
          value: r.peer
            ? fmt(r.inFlight)
            : `${fmt(r.inFlight)}, ${times(r.inFlight / peer.inFlight)}`,
          segments: [{ value: r.inFlight, color: r.peer ? COLORS.peer : COLORS.sluice }],
        })),
        {
          label: ceilingLabel,
          value: fmt(ceiling.clients50),
          segments: [{ value: ceiling.clients50, color: COLORS.neutral }],
        },
      ],
      marks: [{ value: ceiling.clients50, label: `ceiling ${fmt(ceiling.clients50)}` }],
    })
    const y2 = head.top + speed.height + 14
    const memory = barPanel({
      x: 8,
      y: y2,
      width: width - 16,
      labelWidth,
      title: 'Redis bytes per key after one request (MEMORY USAGE; lower is better)',
      rows: bytesPerKey.map((r) => ({
        label: r.name,
        value: `${r.bytes} B`,
        segments: [{ value: r.bytes, color: r.peer ? COLORS.peer : COLORS.sluice }],
      })),
    })
    return documentSvg({
      width,
      height: y2 + memory.height + 10,
      head,
      description: [
        ...rows.map((r) => `${r.name}: ${fmt(r.inFlight)} decisions/s.`),
        `Raw ceiling ${fmt(ceiling.clients50)}/s.`,
        ...bytesPerKey.map((r) => `${r.name}: ${r.bytes} bytes per key.`),
      ].join(' '),
      body: [
        speed.svg,
        memory.svg,
        legend(8, head.legendY, [
          { color: COLORS.sluice, label: 'Sluice RedisStore' },
          { color: COLORS.peer, label: 'rate-limiter-flexible RateLimiterRedis' },
          { color: COLORS.neutral, label: 'redis-benchmark' },
        ]),
      ].join('\n'),
    })
  },

  memcached(record) {
    const { rows } = record.data
    const width = 640
    const labelOf = (r) => `${r.algorithm}, ${r.keys === 'hot' ? 'one hot key' : 'distinct keys'}`
    const labelWidth = labelWidthOf(rows.map(labelOf))
    const head = header(
      width,
      'MemcachedStore beside RedisStore: decisions per second',
      measured(record),
    )
    const bars = rows.flatMap((r, i) => [
      {
        label: labelOf(r),
        gapBefore: i === 0 ? 0 : 6,
        value: `${fmt(r.memcached)}${r.memcachedFailed ? ` (${r.memcachedFailed} failed)` : ''}`,
        segments: [{ value: r.memcached, color: COLORS.sluice }],
      },
      {
        label: '',
        value: r.redis === null ? 'n/a' : fmt(r.redis),
        segments: [{ value: r.redis ?? 0, color: COLORS.peer }],
      },
    ])
    const panel = barPanel({
      x: 8,
      y: head.top,
      width: width - 16,
      labelWidth,
      title: 'decisions/s, every request admitted (the write path)',
      rows: bars,
    })
    return documentSvg({
      width,
      height: head.top + panel.height + 10,
      head,
      description: rows
        .map(
          (r) =>
            `${labelOf(r)}: memcached ${fmt(r.memcached)}/s, redis ${r.redis === null ? 'n/a' : `${fmt(r.redis)}/s`}.`,
        )
        .join(' '),
      body: [
        panel.svg,
        legend(8, head.legendY, [
          { color: COLORS.sluice, label: 'MemcachedStore' },
          { color: COLORS.peer, label: 'RedisStore' },
        ]),
      ].join('\n'),
    })
  },

  accuracy(record) {
    const { totals, limit, windowMs } = record.data
    const width = 760
    const labelWidth = labelWidthOf(totals.map((r) => r.algorithm))
    const panelWidth = (width - 16 - labelWidth) / 2
    const head = header(
      width,
      'Accuracy against an exact sliding window, all traces',
      measured(
        record,
        `limit ${limit} per ${windowMs / 1000} s; adversarial traces, clients near or over the limit`,
      ),
    )
    const wrong = barPanel({
      x: 8,
      y: head.top,
      width: labelWidth + panelWidth - 8,
      labelWidth,
      title: 'misclassified, % of all requests',
      rows: totals.map((r) => ({
        label: r.algorithm,
        value: `${r.misclassifiedPct.toFixed(1)}%`,
        segments: [
          { value: r.wronglyAdmittedPct, color: COLORS.wrongAdmit },
          { value: r.wronglyRejectedPct, color: COLORS.wrongReject },
        ],
      })),
    })
    const maxWorst = Math.max(2, ...totals.map((r) => r.worstWindowAdmitted))
    const worst = barPanel({
      x: 8 + labelWidth + panelWidth,
      y: head.top,
      width: panelWidth - 8,
      labelWidth: 0,
      title: `worst ${windowMs / 1000} s window, x the limit`,
      max: maxWorst * 1.02,
      rows: totals.map((r) => ({
        label: r.algorithm,
        value:
          r.worstWindowPassed === r.worstWindowAdmitted
            ? times(r.worstWindowAdmitted)
            : `${times(r.worstWindowAdmitted)}, passed on ${times(r.worstWindowPassed)}`,
        segments: [{ value: r.worstWindowAdmitted, color: COLORS.sluice }],
      })),
      marks: [{ value: 1, label: 'limit' }],
    })
    return documentSvg({
      width,
      height: head.top + Math.max(wrong.height, worst.height) + 10,
      head,
      description: totals
        .map(
          (r) =>
            `${r.algorithm}: ${r.misclassifiedPct.toFixed(3)}% misclassified (${r.wronglyAdmittedPct.toFixed(3)}% wrongly admitted, ${r.wronglyRejectedPct.toFixed(3)}% wrongly rejected), worst window ${times(r.worstWindowAdmitted)} the limit.`,
        )
        .join(' '),
      body: [
        wrong.svg,
        worst.svg,
        legend(8, head.legendY, [
          { color: COLORS.wrongAdmit, label: 'wrongly admitted' },
          { color: COLORS.wrongReject, label: 'wrongly rejected' },
          { color: COLORS.sluice, label: 'most admitted in one window' },
        ]),
      ].join('\n'),
    })
  },
}

// ---------------------------------------------------------------------------------------------
// The results section of docs/benchmarks.md

const RESULTS_BEGIN = '<!-- results:begin -->'
const RESULTS_END = '<!-- results:end -->'

/** "a-bx" (or "ax" when equal): the span of ratios, as the prose elsewhere quotes them. */
function span(values, format = (v) => v.toFixed(2)) {
  const lo = format(Math.min(...values))
  const hi = format(Math.max(...values))
  return lo === hi ? lo : `${lo}-${hi}`
}
const pct = (ratio) => `${Math.round((1 - ratio) * 100)}%`
const link = (record) => `[${record.name}.md](bench/${record.name}.md)`
const when = (record) =>
  `${record.machine.date} on ${record.machine.cpus}, Node ${record.machine.node}`

/** One paragraph (or table) per part: its headline figures, from the same JSON as its chart. */
const summaries = {
  core(record) {
    const { rows, keys } = record.data
    const peer = rows.find((r) => r.peer)
    const sluice = rows.filter((r) => !r.peer)
    const versus = (key) => span(sluice.map((r) => r[key] / peer[key]))
    const paired = sluice.map((r) => r.pairedHotRatio).filter((v) => typeof v === 'number')
    return (
      `Sluice's MemoryStore against ${peer.name}, every algorithm: ` +
      `${versus('hot')}x the decisions per second on one hot key` +
      (paired.length === sluice.length
        ? ` (${span(paired)}x measured side by side in one process)`
        : '') +
      `, ${versus('insert')}x on the first touch of ${fmt(keys)} keys and ${versus('update')}x on the ` +
      `second pass, in ${span(
        sluice.map((r) => r.bytesPerKey),
        (v) => v.toFixed(0),
      )} B of heap per key against ${peer.bytesPerKey.toFixed(0)} B.`
    )
  },
  redis(record) {
    const { rows, keys, inFlight, bytesPerKey } = record.data
    const peer = rows.find((r) => r.peer)
    const sluice = rows.filter((r) => !r.peer)
    const versus = (key) => span(sluice.map((r) => r[key] / peer[key]))
    const sentences = [
      `RedisStore against ${peer.name}, by algorithm: ${versus('inFlight')}x the decisions per ` +
        `second with ${fmt(inFlight)} in flight over ${fmt(keys)} keys, ${versus('sequential')}x ` +
        `one at a time.`,
    ]
    const spread = sluice.every((r) => isNumber(r.hot) && isNumber(r.million))
    if (spread && isNumber(peer.hot) && isNumber(peer.million) && isNumber(record.data.million)) {
      sentences.push(
        `On one hot key ${versus('hot')}x, on ${fmt(record.data.million)} distinct keys ${versus('million')}x.`,
      )
    }
    const ours = bytesPerKey.filter((r) => !r.peer)
    const theirs = bytesPerKey.find((r) => r.peer)
    if (theirs !== undefined && ours.length > 0) {
      sentences.push(
        `Redis holds ${span(
          ours.map((r) => r.bytes),
          (v) => v.toFixed(0),
        )} B per key (MEMORY USAGE) against ${theirs.bytes} B.`,
      )
    }
    return sentences.join(' ')
  },
  http(record) {
    const lines = []
    for (const [name, f] of Object.entries(record.data.frameworks)) {
      const row = (variant) => f.rows.find((r) => r.variant === variant)
      const parts = [
        `Sluice memory costs ${pct(row('sluice-memory').ratio)} of the no-limiter baseline ` +
          `(${f.peer.memory}: ${pct(row('peer-memory').ratio)}` +
          (row('floor')
            ? `; a middleware that only sets the three headers: ${pct(row('floor').ratio)}`
            : '') +
          ')',
      ]
      const ours = row('sluice-redis')
      const theirs = row('peer-redis')
      if (ours && theirs) {
        const ratio = f.versusPeer?.redis
        parts.push(
          `with Redis ${fmt(ours.rps)} req/s against ${fmt(theirs.rps)}` +
            (isNumber(ratio)
              ? ` (${ratio.toFixed(2)}x, the median of each round's ratio)`
              : ' (medians)'),
        )
      }
      lines.push(`- ${capital(name)}: ${parts.join('; ')}.`)
    }
    return lines.join('\n')
  },
  instructions(record) {
    const lines = []
    for (const [name, f] of Object.entries(record.data.frameworks)) {
      const added = (variant) =>
        `${((f.rows.find((r) => r.variant === variant).ratio - 1) * 100).toFixed(1)}%`
      lines.push(
        `- ${capital(name)}: Sluice memory adds ${added('sluice-memory')} to the no-limiter ` +
          `server's instructions per request outside V8's compiler and garbage collector ` +
          `(${f.peer}: ${added('peer-memory')}; a middleware that only sets the three headers: ` +
          `${added('floor')})` +
          rejecting(f),
      )
    }
    return lines.join('\n')
  },
  memcached(record) {
    const { rows } = record.data
    const both = rows.filter((r) => r.redis !== null && r.redis > 0)
    return (
      `MemcachedStore makes ${span(
        rows.map((r) => r.memcached),
        fmt,
      )} decisions per second on the counter algorithms` +
      (both.length > 0
        ? `, ${span(both.map((r) => r.memcached / r.redis))}x RedisStore's on the same machine.`
        : '.')
    )
  },
  accuracy(record) {
    const { totals, limit, windowMs } = record.data
    return [
      `Against an exact sliding window of ${limit} per ${windowMs / 1000} s, over every trace:`,
      '',
      '| algorithm | misclassified | wrongly admitted | wrongly rejected | worst window, x the limit |',
      '| --- | --- | --- | --- | --- |',
      ...totals.map(
        (r) =>
          `| ${r.algorithm} | ${r.misclassifiedPct.toFixed(3)}% | ${r.wronglyAdmittedPct.toFixed(3)}% | ` +
          `${r.wronglyRejectedPct.toFixed(3)}% | ${r.worstWindowAdmitted.toFixed(2)} |`,
      ),
    ].join('\n')
  },
}
const SUMMARY_TITLES = {
  core: 'In-process decisions and memory',
  redis: 'Redis store',
  http: 'HTTP',
  instructions: 'Instructions per HTTP request',
  memcached: 'Memcached store',
  accuracy: 'Accuracy',
}

/** The text between the markers: each part's headline from its valid result file. */
function resultsSection(records) {
  const out = [
    // Written as generated: prettier would realign the tables, and the next run undo it.
    '<!-- prettier-ignore-start -->',
    'Written by `bench/charts.js` from `docs/bench/*.json` (`npm run bench`, or',
    "`npm run bench:charts` after one part): the headline of each part's last run, with the",
    'machine and date it was measured on. The result files hold the full tables.',
  ]
  for (const name of Object.keys(summaries)) {
    const record = records.get(name)
    const title = `**${SUMMARY_TITLES[name]}**`
    out.push(
      '',
      record === undefined
        ? `${title}: no valid result (run \`npm run bench:${name}\`).`
        : `${title} (${when(record)}; ${link(record)}):\n\n${summaries[name](record)}`,
    )
  }
  out.push('<!-- prettier-ignore-end -->')
  return out.join('\n') + '\n'
}

/** Replaces the results section of the docs page; false when its markers are missing. */
function writeResultsSection(file, records) {
  const page = fs.readFileSync(file, 'utf8')
  const begin = page.indexOf(RESULTS_BEGIN)
  const end = page.indexOf(RESULTS_END)
  if (begin < 0 || end < begin) return false
  const next =
    page.slice(0, begin + RESULTS_BEGIN.length) + '\n' + resultsSection(records) + page.slice(end)
  if (next !== page) fs.writeFileSync(file, next)
  return true
}

function main() {
  const from = resultsDir()
  const to = path.resolve(process.env.BENCH_IMG_DIR ?? path.join(__dirname, '../docs/img'))
  const docs = path.resolve(
    process.env.BENCH_DOCS_FILE ?? path.join(__dirname, '../docs/benchmarks.md'),
  )
  const wanted = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(charts)
  const failures = []
  /** Every part's valid record, for the results section, whichever charts were asked for. */
  const records = new Map()
  const load = (name) => {
    const file = path.join(from, `${name}.json`)
    if (!fs.existsSync(file)) throw new InputError('missing: run its benchmark first')
    let record
    try {
      record = JSON.parse(fs.readFileSync(file, 'utf8'))
    } catch (error) {
      throw new InputError(`not JSON: ${error.message}`)
    }
    checks[name](envelope(record, name))
    return record
  }
  fs.mkdirSync(to, { recursive: true })
  for (const name of wanted) {
    const file = path.join(from, `${name}.json`)
    try {
      if (!charts[name]) throw new InputError(`no chart named ${name}`)
      const record = load(name)
      records.set(name, record)
      const svg = charts[name](record)
      const out = path.join(to, `bench-${name}.svg`)
      fs.writeFileSync(out, svg)
      console.log(`${path.relative(process.cwd(), out)}  ${svg.length} B`)
    } catch (error) {
      if (!(error instanceof InputError)) throw error
      failures.push(`${path.relative(process.cwd(), file)}: ${error.message}`)
    }
  }
  for (const name of Object.keys(summaries)) {
    if (records.has(name) || wanted.includes(name)) continue
    try {
      records.set(name, load(name))
    } catch (error) {
      if (!(error instanceof InputError)) throw error
    }
  }
  if (!writeResultsSection(docs, records)) {
    failures.push(
      `${path.relative(process.cwd(), docs)}: has no ${RESULTS_BEGIN} ... ${RESULTS_END}`,
    )
  } else {
    console.log(`${path.relative(process.cwd(), docs)}  results section`)
  }
  if (failures.length > 0) {
    for (const f of failures) console.error(`charts: ${f}`)
    process.exit(1)
  }
}

main()
