// The reading aids of a simulation picture (svg.ts): the legend, the time axis and the count
// axis with its labelled limit line, so a picture reads without the text around it.
import { formatDuration } from '@sluice/core'

/** The outcome colours (ColorBrewer Dark2, told apart with the common colour blindnesses). */
export const SVG_COLORS = { admitted: '#1b9e77', rejected: '#d95f02' } as const
/** The thin line from a held request's arrival to its departure. */
export const HELD_COLOR = '#999'

/** A coordinate to a tenth of a pixel: finer cannot be seen, and it keeps the file small. */
export const num = (n: number): string => String(Math.round(n * 10) / 10)
const HALO = 'stroke="#fff" stroke-width="3" paint-order="stroke"'

/**
 * One line of keys under the title, right-aligned at `right`: a tick per outcome, the slanted
 * "held" line when a leaky bucket delays requests, and the dashed limit line.
 */
export function legend(right: number, y: number, held: boolean): string {
  const entries: { label: string; mark: (x: number) => string }[] = [
    { label: 'admitted', mark: (x) => tick(x, y, SVG_COLORS.admitted) },
    { label: 'rejected', mark: (x) => tick(x, y, SVG_COLORS.rejected) },
  ]
  if (held) {
    entries.push({
      label: 'held, then passed on',
      mark: (x) =>
        `<path d="M${num(x - 3)} ${y - 8}L${num(x + 3)} ${y}" stroke="${HELD_COLOR}" fill="none"/>`,
    })
  }
  entries.push({
    label: 'limit',
    mark: (x) =>
      `<path d="M${num(x - 8)} ${y - 3}h14" stroke="#333" stroke-dasharray="4 3" fill="none"/>`,
  })
  // Laid out right to left at 6 px a character, wide enough for the usual sans-serif fonts.
  const parts: string[] = []
  let at = right
  for (const e of entries.reverse()) {
    at -= e.label.length * 6
    parts.push(`<text x="${num(at)}" y="${y}">${e.label}</text>`, e.mark(at - 8))
    at -= 28
  }
  return `<g class="legend">${parts.join('')}</g>`
}

function tick(x: number, y: number, color: string): string {
  return `<path d="M${num(x)} ${y - 9}v10" stroke="${color}" stroke-width="1.5"/>`
}

/** Where the chart lies: its left and right edge in px, and the limiter's window. */
export interface ChartFrame {
  windowMs: number
  left: number
  right: number
}

/**
 * The time axis under the chart: a label at every `step` windows from 0 (in seconds since the
 * picture's start), spaced at least 28 px apart, and the axis title "time (s)".
 */
export function timeAxis(
  opts: ChartFrame & { t0: number; t1: number; x: (t: number) => number; bottom: number },
): string {
  const { t0, t1, windowMs, x, bottom, left, right } = opts
  const perWindow = x(t0 + windowMs) - x(t0)
  const step = Math.max(1, Math.ceil(28 / perWindow)) * windowMs
  const parts = [`<path d="M${left} ${bottom}H${right}" stroke="#333"/>`]
  for (let t = t0; t <= t1; t += step) {
    const seconds = Math.round(t - t0) / 1000
    parts.push(
      `<path d="M${num(x(t))} ${bottom}v3" stroke="#333"/>`,
      `<text x="${num(x(t))}" y="${bottom + 13}" text-anchor="middle">${seconds}</text>`,
    )
  }
  parts.push(
    `<text x="${num((left + right) / 2)}" y="${bottom + 25}" text-anchor="middle">time (s)</text>`,
  )
  return `<g class="time-axis">${parts.join('')}</g>`
}

/**
 * The count axis left of the chart: its title over it, 0 and the top of the scale as labels,
 * and the dashed limit line across with "limit N" at its right end.
 */
export function countAxis(
  opts: ChartFrame & { limit: number; yMax: number; y: (c: number) => number; top: number },
): string {
  const { windowMs, limit, yMax, y, top, left, right } = opts
  const label = (c: number): string =>
    `<text x="${left - 4}" y="${num(y(c) + 3)}" text-anchor="end">${c}</text>`
  return [
    `<g class="count-axis">`,
    `<text x="${left}" y="${top - 8}">requests passed on in the last ${formatDuration(windowMs)}</text>`,
    `<path d="M${left} ${num(y(yMax))}V${num(y(0))}" stroke="#333"/>`,
    label(0),
    label(yMax),
    `</g>`,
    `<line class="limit" x1="${left}" y1="${num(y(limit))}" x2="${right}" y2="${num(y(limit))}" stroke="#333" stroke-dasharray="4 3"/>`,
    `<text x="${right}" y="${num(y(limit) - 3)}" text-anchor="end" ${HALO}>limit ${limit}</text>`,
  ].join('\n')
}
