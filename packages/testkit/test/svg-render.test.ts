// Renders every SVG in docs/img in headless Chromium and checks its text the way a reader sees
// it: every label lies inside the picture's viewBox, and no two labels overlap. The layout code
// guesses text widths from a mean character width; the browser measures the real glyphs.
import { readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { launchChromium } from '../src/chromium'

const IMG = resolve(__dirname, '../../../docs/img')
const files = readdirSync(IMG).filter((f) => f.endsWith('.svg'))

interface Box {
  text: string
  x: number
  y: number
  width: number
  height: number
}

/** The browser side: the viewBox and each non-empty text element's box in its coordinates. */
interface SvgGlobals {
  document: {
    documentElement: {
      viewBox: { baseVal: { x: number; y: number; width: number; height: number } }
      querySelectorAll(selector: string): ArrayLike<{
        textContent: string | null
        getBBox(): { x: number; y: number; width: number; height: number }
      }>
    }
  }
}

// Half a pixel: anti-aliasing bleeds that far, and glyph boxes of adjacent baselines touch.
const SLACK = 0.5

function overlaps(a: Box, b: Box): boolean {
  return (
    a.x + SLACK < b.x + b.width &&
    b.x + SLACK < a.x + a.width &&
    a.y + SLACK < b.y + b.height &&
    b.y + SLACK < a.y + a.height
  )
}

describe('every SVG in docs/img renders with its labels inside and apart', () => {
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    browser = await launchChromium()
    page = await browser.newPage()
  })

  afterAll(async () => {
    await browser?.close()
  })

  test('docs/img holds the pictures and charts', () => {
    expect(files.length).toBeGreaterThanOrEqual(11)
  })

  test.each(files)('%s', async (file) => {
    await page.goto(pathToFileURL(join(IMG, file)).href)
    const { view, boxes } = await page.evaluate(() => {
      const root = (globalThis as unknown as SvgGlobals).document.documentElement
      const { x, y, width, height } = root.viewBox.baseVal
      const texts = Array.from(root.querySelectorAll('text'))
      return {
        view: { x, y, width, height },
        boxes: texts
          .filter((t) => (t.textContent ?? '').trim() !== '')
          .map((t) => {
            const b = t.getBBox()
            return { text: t.textContent ?? '', x: b.x, y: b.y, width: b.width, height: b.height }
          }),
      }
    })
    expect(view.width).toBeGreaterThan(0)
    expect(boxes.length).toBeGreaterThan(0)

    const outside = boxes
      .filter(
        (b) =>
          b.x < view.x - SLACK ||
          b.y < view.y - SLACK ||
          b.x + b.width > view.x + view.width + SLACK ||
          b.y + b.height > view.y + view.height + SLACK,
      )
      .map((b) => b.text)
    const overlapping: string[] = []
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (overlaps(boxes[i], boxes[j])) overlapping.push(`${boxes[i].text} / ${boxes[j].text}`)
      }
    }
    expect({ outside, overlapping }).toEqual({ outside: [], overlapping: [] })
  })
})
