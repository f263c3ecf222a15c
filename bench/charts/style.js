'use strict'
// The charts' colours and sizes: the shared palette (@sluice/cli, as the simulator's
// pictures use it) given its meaning here, and the widths text is laid out with.
const { SVG_PALETTE } = require('@sluice/cli')

const COLORS = {
  sluice: SVG_PALETTE.teal,
  peer: SVG_PALETTE.purple,
  neutral: SVG_PALETTE.grey, // baselines and ceilings
  wrongAdmit: SVG_PALETTE.orange,
  wrongReject: SVG_PALETTE.pink,
  text: SVG_PALETTE.ink,
}
const FAINT = 0.45 // fill-opacity of the rejecting-path bars
const BAR = 12
const BAR_GAP = 5
const CHAR = 5.3 // mean advance of a 10 px sans-serif character, for layout only
// Widths for fitting labels: on the wide side (DejaVu Sans, bold titles), so a label that fits
// here fits in the fonts a browser picks for sans-serif.
const FIT_CHAR = 6.1
const FIT_BOLD = 6.9

/** Sluice's variants teal, the peer's purple, the baselines grey. */
const variantColor = (variant) =>
  variant.startsWith('sluice')
    ? COLORS.sluice
    : variant.startsWith('peer')
      ? COLORS.peer
      : COLORS.neutral

module.exports = { COLORS, FAINT, BAR, BAR_GAP, CHAR, FIT_CHAR, FIT_BOLD, variantColor }
