'use strict'
// The charts of the stores and algorithms: in-process, Redis, Memcached, accuracy.
const { fmt } = require('../../lib')
const { barPanel } = require('../bars')
const { measured, times } = require('../format')
const { documentSvg, header, labelWidthOf, titleLinesOf } = require('../layout')
const { withLegend } = require('../legend')
const { COLORS } = require('../style')

module.exports = {
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
      body: withLegend([drawn.map((p) => p.svg).join('\n')], head.legendY, [
        { color: COLORS.sluice, label: 'Sluice' },
        { color: COLORS.peer, label: 'rate-limiter-flexible' },
      ]),
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
      body: withLegend([speed.svg, memory.svg], head.legendY, [
        { color: COLORS.sluice, label: 'Sluice RedisStore' },
        { color: COLORS.peer, label: 'rate-limiter-flexible RateLimiterRedis' },
        { color: COLORS.neutral, label: 'redis-benchmark' },
      ]),
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
      body: withLegend([panel.svg], head.legendY, [
        { color: COLORS.sluice, label: 'MemcachedStore' },
        { color: COLORS.peer, label: 'RedisStore' },
      ]),
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
      body: withLegend([wrong.svg, worst.svg], head.legendY, [
        { color: COLORS.wrongAdmit, label: 'wrongly admitted' },
        { color: COLORS.wrongReject, label: 'wrongly rejected' },
        { color: COLORS.sluice, label: 'most admitted in one window' },
      ]),
    })
  },
}
