/**
 * Owns drawing a simulation as an SVG chart (requests admitted and refused over time).
 */
import { formatDuration } from '@sluice/core'
import { declareOptions, invalidOption, checkPositiveInteger } from '@sluice/core/adapter'
import type { SimulatedRequest, SimulationResult } from './simulate'
import { countAxis, HELD_COLOR, legend, timeAxis } from './svg-frame'
import { num, SVG_COLORS, svgBackground, svgOpen, svgText } from './svg-primitives'

/** Widest and tallest picture drawn: the drawing's size grows with its width. */
export const MAX_PICTURE_PX = 10_000

/** A width or height: a positive integer up to MAX_PICTURE_PX. */
function checkPixels(value: unknown, option: string): number {
  const px = checkPositiveInteger(value, option)
  if (px > MAX_PICTURE_PX) invalidOption(option, px, `at most ${MAX_PICTURE_PX} (px)`)
  return px
}

export interface RenderOptions {
  /** Drawn at the top and used as the accessible name. @default the policy, e.g. 'gcra 5 per 1s' */
  title?: string
  /** In px, at most 10,000. @default 480 */
  width?: number
  /** In px, at most 10,000. @default 200 */
  height?: number
  /** Which key to draw (the limit applies per key). @default the key of the first request */
  key?: string
}

const LEFT = 64
const RIGHT = 12
const ROW = 12
const ROW_GAP = 4

/** A whole pixel column: ticks and count steps closer than a pixel cannot be told apart. */
const px = (n: number): string => String(Math.round(n))

/** One vertical tick per pixel column: a busy trace stays a few KB and draws the same. */
function ticks(xs: readonly number[], top: number, height: number): string {
  const seen = new Set<string>()
  let d = ''
  for (const x of xs) {
    const at = px(x)
    if (seen.has(at)) continue
    seen.add(at)
    d += `M${at} ${top}v${height}`
  }
  return d
}

/**
 * Units passed on within the trailing window, as change points [time, count]: each admitted
 * request counts from its departure until one window later. This is the rate the protected
 * service sees, which the limit line bounds for an exact limiter.
 */
function windowCounts(requests: readonly SimulatedRequest[], windowMs: number): number[][] {
  const deltas = new Map<number, number>()
  for (const r of requests) {
    if (r.departAt === undefined) continue
    deltas.set(r.departAt, (deltas.get(r.departAt) ?? 0) + r.cost)
    deltas.set(r.departAt + windowMs, (deltas.get(r.departAt + windowMs) ?? 0) - r.cost)
  }
  let count = 0
  return [...deltas.keys()].sort((a, b) => a - b).map((t) => [t, (count += deltas.get(t) ?? 0)])
}

/** renderSvg's options, declared once; null takes the default, as `value ?? default` did. */
export const RENDER_OPTIONS = declareOptions<RenderOptions>('renderSvg', {
  title: { doc: 'drawn at the top; default the policy, e.g. gcra 5 per 1s', orNull: true },
  width: { doc: 'in px, at most 10,000', default: 480, check: checkPixels, orNull: true },
  height: { doc: 'in px, at most 10,000', default: 200, check: checkPixels, orNull: true },
  key: { doc: 'which key to draw; default the key of the first request', orNull: true },
})

/**
 * Draws a simulation as a small standalone SVG: a tick per request in an "admitted" and a
 * "rejected" row (and, when a leaky bucket delays requests, a "passed on" row joined to the
 * arrivals), and below them the units passed on in the trailing window against the labelled
 * limit line, with a legend, a time axis in seconds and a count axis. Window boundaries are
 * drawn as faint vertical lines, so edge bursts show.
 */
export function renderSvg(result: SimulationResult, options: RenderOptions = {}): string {
  const given = RENDER_OPTIONS.resolve(options)
  const width = given.width as number
  const height = given.height as number
  const policy = result.policies[0]
  const key = given.key ?? result.requests[0]?.key
  const requests = result.requests.filter((r) => r.key === key)
  const title =
    given.title ?? `${policy.algorithm} ${policy.limit} per ${formatDuration(policy.windowMs)}`
  const w = policy.windowMs

  const shaped = requests.some((r) => r.delayMs > 0)
  const last = requests.reduce((m, r) => Math.max(m, r.departAt ?? r.at), 0)
  const t0 = requests.length > 0 ? Math.floor(requests[0].at / w) * w : 0
  const t1 = Math.max(t0 + w, Math.ceil((last + 1) / w) * w)
  const x = (t: number): number => LEFT + ((t - t0) / (t1 - t0)) * (width - LEFT - RIGHT)

  const rowTop = [38, 38 + ROW + ROW_GAP, 38 + 2 * (ROW + ROW_GAP)]
  const chartTop = (shaped ? rowTop[2] : rowTop[1]) + ROW + 26
  const chartBottom = height - 30
  const counts = windowCounts(requests, w)
  const peak = counts.reduce((m, [, c]) => Math.max(m, c), 0)
  const yMax = Math.max(2 * policy.limit, peak)
  const y = (c: number): number => chartBottom - (c / yMax) * (chartBottom - chartTop)

  const parts: string[] = []
  parts.push(
    svgOpen(width, height, title),
    svgBackground(width, height),
    svgText(4, 14, title, 'font-size="12" font-weight="bold"'),
    legend(width - RIGHT, 31, shaped),
  )

  const windows = (t1 - t0) / w
  if (windows <= 60) {
    let grid = ''
    for (let t = t0; t <= t1; t += w) grid += `M${num(x(t))} ${rowTop[0]}V${chartBottom}`
    parts.push(`<path class="grid" d="${grid}" stroke="#ddd"/>`)
  }

  const rowLabel = (row: number, label: string): string =>
    svgText(LEFT - 4, rowTop[row] + ROW - 2, label, 'text-anchor="end"')
  const admitted = requests.filter((r) => r.allowed)
  const rejected = requests.filter((r) => !r.allowed)
  parts.push(
    rowLabel(0, 'admitted'),
    rowLabel(1, 'rejected'),
    `<path class="admitted" d="${ticks(
      admitted.map((r) => x(r.at)),
      rowTop[0],
      ROW,
    )}" stroke="${SVG_COLORS.admitted}" stroke-width="1.5"/>`,
    `<path class="rejected" d="${ticks(
      rejected.map((r) => x(r.at)),
      rowTop[1],
      ROW,
    )}" stroke="${SVG_COLORS.rejected}" stroke-width="1.5"/>`,
  )
  if (shaped) {
    // Each delayed request is joined from its arrival to its departure, across the rejected row.
    const seen = new Set<string>()
    let delays = ''
    for (const r of admitted) {
      if (r.delayMs === 0 || r.departAt === undefined) continue
      const segment = `M${num(x(r.at))} ${rowTop[0] + ROW}L${num(x(r.departAt))} ${rowTop[2]}`
      if (!seen.has(segment)) delays += segment
      seen.add(segment)
    }
    parts.push(
      rowLabel(2, 'passed on'),
      `<path class="delay" d="${delays}" stroke="${HELD_COLOR}" stroke-width="0.5" fill="none"/>`,
      `<path class="departed" d="${ticks(
        admitted.map((r) => x(r.departAt ?? r.at)),
        rowTop[2],
        ROW,
      )}" stroke="${SVG_COLORS.admitted}" stroke-width="1.5"/>`,
    )
  }

  // Change points that fall in one pixel column draw as one vertical stroke over their range,
  // so the path grows with the width of the picture, not with the length of the trace.
  let area = `M${num(x(t0))} ${num(y(0))}`
  let column = ''
  let low = 0
  let high = 0
  let lastCount = 0
  const flush = (): void => {
    if (column === '') return
    area += `H${column}V${num(y(high))}`
    if (low !== high) area += `V${num(y(low))}`
    if (lastCount !== low) area += `V${num(y(lastCount))}`
  }
  for (const [t, c] of counts) {
    if (t >= t1) break
    const at = px(x(t))
    if (at !== column) {
      flush()
      column = at
      low = high = c
    }
    low = Math.min(low, c)
    high = Math.max(high, c)
    lastCount = c
  }
  flush()
  area += `H${num(x(t1))}`
  parts.push(
    `<path class="count" d="${area}" stroke="${SVG_COLORS.admitted}" fill="none"/>`,
    countAxis({
      windowMs: w,
      limit: policy.limit,
      yMax,
      y,
      top: chartTop,
      left: LEFT,
      right: width - RIGHT,
    }),
    timeAxis({ t0, t1, windowMs: w, x, bottom: chartBottom, left: LEFT, right: width - RIGHT }),
    '</svg>',
  )
  return parts.join('\n') + '\n'
}
