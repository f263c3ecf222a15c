'use strict'
// The frame of every chart: wrapping text to a width, the title and subtitle, and the
// standalone SVG document around the panels.
const { escapeXml, svgBackground, svgOpen, svgText: text, SVG_PALETTE } = require('@sluice/cli')
const { CHAR, COLORS, FIT_BOLD } = require('./style')

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

const labelWidthOf = (labels) => Math.ceil(Math.max(...labels.map((l) => l.length)) * CHAR) + 10

/** Title and subtitle (wrapped to the width); `bottom` is where the legend line goes. */
function header(width, title, subtitle) {
  const lines = wrap(subtitle, width - 16)
  const svg = [
    text(8, 18, title, 'font-size="13" font-weight="bold"'),
    ...lines.map((l, i) => text(8, 33 + 13 * i, l, `fill="${SVG_PALETTE.faintInk}"`)),
  ].join('\n')
  const bottom = 33 + 13 * (lines.length - 1)
  return { svg, title, legendY: bottom + 18, top: bottom + 30 }
}

/** A standalone SVG document: the header, the content, a description for screen readers. */
function documentSvg({ width, height, head, description, body }) {
  return (
    [
      svgOpen(width, height, head.title, `fill="${COLORS.text}"`),
      `<desc>${escapeXml(description)}</desc>`,
      svgBackground(width, height),
      head.svg,
      body,
      '</svg>',
    ].join('\n') + '\n'
  )
}

module.exports = { wrap, titleLinesOf, labelWidthOf, header, documentSvg }
