/**
 * Owns the SVG primitives every hand-written picture of the project shares: the simulator's
 * (svg.ts, svg-frame.ts) and the benchmark charts (bench/charts/). Escaping, coordinates, the
 * palette and the few elements both draw, so the two kinds of pictures look alike.
 */

/**
 * The project's palette: ColorBrewer Dark2 (told apart with the common colour blindnesses) and
 * the greys of axes, text and baselines.
 */
export const SVG_PALETTE = {
  /** Dark2 teal: admitted requests; Sluice's bars. */
  teal: '#1b9e77',
  /** Dark2 orange: rejected requests; wrongly admitted ones. */
  orange: '#d95f02',
  /** Dark2 purple: a peer's bars. */
  purple: '#7570b3',
  /** Dark2 pink: wrongly rejected requests. */
  pink: '#e7298a',
  /** Baselines, ceilings, a held request's line. */
  grey: '#999',
  /** Axes, marks and text. */
  ink: '#333',
  /** Subtitles. */
  faintInk: '#666',
} as const

/** The outcome colours of the simulator's pictures. */
export const SVG_COLORS = { admitted: SVG_PALETTE.teal, rejected: SVG_PALETTE.orange } as const

/** Every character XML gives meaning to becomes a numeric reference. */
export function escapeXml(text: string | number): string {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** A coordinate to a tenth of a pixel: finer cannot be seen, and it keeps the file small. */
export const num = (n: number): string => String(Math.round(n * 10) / 10)

/** A white outline under a text: it stays legible over a line or a bar. */
export const HALO = 'stroke="#fff" stroke-width="3" paint-order="stroke"'

/** `attrs` as written after an element's own attributes: nothing, or a space and them. */
const more = (attrs: string): string => (attrs ? ` ${attrs}` : '')

/** A `<text>` at (x, y), its content escaped; `attrs` are added as written. */
export function svgText(x: number, y: number, content: string | number, attrs = ''): string {
  return `<text x="${num(x)}" y="${num(y)}"${more(attrs)}>${escapeXml(content)}</text>`
}

/** A filled `<rect>`; `attrs` are added as written. */
export function svgRect(
  x: number,
  y: number,
  width: number,
  height: number,
  fill: string,
  attrs = '',
): string {
  return `<rect x="${num(x)}" y="${num(y)}" width="${num(width)}" height="${num(height)}" fill="${fill}"${more(attrs)}/>`
}

/**
 * The start of a standalone picture: the `<svg>` element (an image named by `title` for screen
 * readers, sans-serif 10 px; `attrs` added as written) and its `<title>`.
 */
export function svgOpen(width: number, height: number, title: string, attrs = ''): string {
  const w = num(width)
  const h = num(height)
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${escapeXml(title)}" font-family="sans-serif" font-size="10"${more(attrs)}>`,
    `<title>${escapeXml(title)}</title>`,
  ].join('\n')
}

/** The white ground under the whole picture. */
export function svgBackground(width: number, height: number): string {
  return `<rect width="${num(width)}" height="${num(height)}" fill="#fff"/>`
}
