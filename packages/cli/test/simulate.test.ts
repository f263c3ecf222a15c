import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inflateSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import { launchChromium } from '@sluice/testkit'
import { ALGORITHMS, ConfigError, createLimiter } from '@sluice/core'
import {
  makeTrace,
  renderSvg,
  runSimulateCommand,
  simulate,
  SVG_COLORS,
  type Trace,
} from '@sluice/cli'

const at = (...times: number[]): Trace => times.map((t) => ({ at: t }))

describe('simulate', () => {
  test('fixed-window: the edge burst passes twice the limit across a boundary', () => {
    const result = simulate(at(10_500, 10_500, 10_500, 10_500, 10_999, 11_000, 11_000, 11_000), {
      algorithm: 'fixed-window',
      limit: 3,
      window: 1000,
    })
    expect(result.requests.map((r) => r.allowed)).toEqual([
      true,
      true,
      true,
      false,
      false,
      true,
      true,
      true,
    ])
    expect(result.requests[3].retryAfterMs).toBe(500)
    expect(result.requests[3].departAt).toBeUndefined()
    expect(result.admitted).toBe(6)
    expect(result.rejected).toBe(2)
  })

  test('leaky-bucket: admitted requests leave one every window / limit', () => {
    const result = simulate(at(0, 0, 0, 0, 500), {
      algorithm: 'leaky-bucket',
      limit: 2,
      window: 1000,
      burst: 3,
    })
    expect(result.requests.map((r) => [r.allowed, r.delayMs, r.departAt])).toEqual([
      [true, 0, 0],
      [true, 500, 500],
      [true, 1000, 1000],
      [false, 0, undefined],
      [true, 1000, 1500],
    ])
    expect(result.requests[3].retryAfterMs).toBe(500)
  })

  test('gcra: the burst, then one request per emission interval', () => {
    const result = simulate(at(0, 0, 0, 100, 200, 250, 400), {
      algorithm: 'gcra',
      limit: 5,
      window: 1000,
      burst: 2,
    })
    expect(result.requests.map((r) => r.allowed)).toEqual([
      true,
      true,
      false,
      false,
      true,
      false,
      true,
    ])
  })

  test('replays by arrival time, keeps keys apart, and agrees with createLimiter', async () => {
    const trace: Trace = [
      { at: 300, key: 'b' },
      { at: 100, key: 'a' },
      { at: 200, key: 'a', cost: 2 },
      { at: 250, key: 'a' },
      { at: 260, key: 'b', cost: 3 },
    ]
    const result = simulate(trace, { algorithm: 'sliding-log', limit: 3, window: 1000 })
    expect(result.requests.map((r) => [r.at, r.key, r.allowed, r.remaining])).toEqual([
      [100, 'a', true, 2],
      [200, 'a', true, 0],
      [250, 'a', false, 0],
      [260, 'b', true, 0],
      [300, 'b', false, 0],
    ])

    // The simulator runs the memory store's transitions: same decisions as a real limiter.
    for (const algorithm of ALGORITHMS) {
      const requests = makeTrace('bursty', { limit: 5, windowMs: 1000, seed: 7 })
      const clock = { now: 0 }
      const limiter = createLimiter({ algorithm, limit: 5, window: 1000, clock: () => clock.now })
      const expected = []
      for (const request of requests) {
        clock.now = request.at
        const d = await limiter.consume('client')
        expected.push([d.allowed, d.remaining, d.retryAfterMs, d.delayMs])
      }
      const simulated = simulate(requests, { algorithm, limit: 5, window: 1000 }).requests
      expect(simulated.map((r) => [r.allowed, r.remaining, r.retryAfterMs, r.delayMs])).toEqual(
        expected,
      )
    }
  })

  test('several limits are all-or-nothing', () => {
    const result = simulate(at(0, 10, 20, 1500, 2500), {
      limits: [
        { algorithm: 'fixed-window', limit: 2, window: 1000 },
        { algorithm: 'fixed-window', limit: 3, window: 10_000 },
      ],
    })
    expect(result.requests.map((r) => r.allowed)).toEqual([true, true, false, true, false])
  })

  test('bad options and trace entries throw a ConfigError naming them', () => {
    expect(() => simulate(at(0), { algorithm: 'gcra', limit: 0, window: 1000 })).toThrow(/`limit`/)
    expect(() =>
      simulate(at(0), { limit: 1, window: 1000, store: {} } as unknown as Parameters<
        typeof simulate
      >[1]),
    ).toThrow(ConfigError)
    expect(() => simulate([{ at: 0 }, { at: -5 }], { limit: 1, window: 1000 })).toThrow(
      /`trace\[1\]\.at`/,
    )
  })

  test('built-in traces are deterministic per seed', () => {
    const options = { limit: 5, windowMs: 1000 }
    expect(makeTrace('bursty', options)).toEqual(makeTrace('bursty', options))
    expect(makeTrace('bursty', { ...options, seed: 2 })).not.toEqual(makeTrace('bursty', options))
    const edge = makeTrace('edge', options).map((r) => r.at)
    // limit requests on each side of boundaries 1000, 3000, 5000, 7000.
    expect(edge).toHaveLength(40)
    expect(edge.filter((t) => t >= 950 && t < 1000)).toHaveLength(5)
    expect(edge.filter((t) => t >= 1000 && t < 1050)).toHaveLength(5)
  })
})

/** The `d` of the path with `class`, split into its subpaths (one per tick or segment). */
function subpaths(svg: string, cls: string): string[] {
  const match = new RegExp(`<path class="${cls}" d="([^"]*)"`).exec(svg)
  if (match === null) throw new Error(`no path.${cls} in the SVG`)
  return match[1].split('M').filter((s) => s !== '')
}

describe('renderSvg', () => {
  const spread = at(0, 2000, 4000, 6000, 6010, 6020, 9000)

  test('one tick per request in the row of its outcome', () => {
    const result = simulate(spread, { algorithm: 'fixed-window', limit: 2, window: 1000 })
    expect(result.admitted).toBe(6)
    const svg = renderSvg(result, { title: 'a & b <c>' })
    expect(subpaths(svg, 'admitted')).toHaveLength(6)
    expect(subpaths(svg, 'rejected')).toHaveLength(1)
    expect(svg).not.toContain('class="departed"')
    expect(svg).toContain('<title>a &#38; b &#60;c&#62;</title>')
    expect(svg).toContain('width="480" height="200"')
  })

  test('leaky-bucket: a departure row joined to the arrivals of delayed requests', () => {
    const result = simulate(spread, {
      algorithm: 'leaky-bucket',
      limit: 2,
      window: 1000,
      burst: 2,
    })
    const svg = renderSvg(result, { width: 300, height: 150 })
    expect(subpaths(svg, 'departed')).toHaveLength(result.admitted)
    expect(subpaths(svg, 'delay')).toHaveLength(result.requests.filter((r) => r.delayMs > 0).length)
    expect(svg).toContain('viewBox="0 0 300 150"')
  })

  test('reads without the text: legend, time axis in seconds, count axis, labelled limit', () => {
    const counted = renderSvg(
      simulate(spread, { algorithm: 'fixed-window', limit: 2, window: 1000 }),
    )
    const texts = [...counted.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1])
    expect(texts).toEqual(
      expect.arrayContaining(['admitted', 'rejected', 'limit', 'limit 2', 'time (s)']),
    )
    expect(texts).toContain('requests passed on in the last 1s')
    // One label a second from 0 to the end of the last window, 10 windows of 40 px each.
    const axis = /<g class="time-axis">(.*?)<\/g>/.exec(counted)?.[1] ?? ''
    expect([...axis.matchAll(/>(\d+)<\/text>/g)].map((m) => m[1])).toEqual([
      '0',
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      '9',
      '10',
    ])
    expect(texts).not.toContain('held, then passed on')
    const shaped = renderSvg(
      simulate(spread, { algorithm: 'leaky-bucket', limit: 2, window: 1000, burst: 2 }),
    )
    expect(shaped).toContain('>held, then passed on</text>')
  })

  test('a picture of a long trace stays small', () => {
    const trace = makeTrace('steady', { limit: 100, windowMs: 1000, windows: 100 })
    const svg = renderSvg(simulate(trace, { algorithm: 'gcra', limit: 100, window: '1s' }))
    expect(trace.length).toBeGreaterThan(10_000)
    expect(svg.length).toBeLessThan(40_000)
  })
})

describe('runSimulateCommand', () => {
  function io() {
    const out = { stdout: '', stderr: '' }
    return {
      out,
      io: {
        stdout: (text: string) => void (out.stdout += text),
        stderr: (text: string) => void (out.stderr += text),
      },
    }
  }

  test('writes the SVG to --out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-simulate-'))
    try {
      const file = join(dir, 'gcra.svg')
      const { out, io: streams } = io()
      const argv = ['--algorithm', 'gcra', '--limit', '5', '--window', '1s', '--burst', '2']
      const code = await runSimulateCommand([...argv, '--trace', 'edge', '--out', file], streams)
      expect(code).toBe(0)
      const expected = renderSvg(
        simulate(makeTrace('edge', { limit: 5, windowMs: 1000 }), {
          algorithm: 'gcra',
          limit: 5,
          window: 1000,
          burst: 2,
        }),
      )
      expect(readFileSync(file, 'utf8')).toBe(expected)
      expect(out.stderr).toMatch(/of 40 requests admitted; wrote/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("--anchor first-request counts each key's windows from its first request", async () => {
    const { out, io: streams } = io()
    const argv = ['--algorithm', 'fixed-window', '--limit', '3', '--window', '1s']
    const expected = renderSvg(
      simulate(makeTrace('edge', { limit: 3, windowMs: 1000 }), {
        algorithm: 'fixed-window',
        anchor: 'first-request',
        limit: 3,
        window: 1000,
      }),
    )
    expect(
      await runSimulateCommand([...argv, '--anchor', 'first-request', '--trace', 'edge'], streams),
    ).toBe(0)
    expect(out.stdout).toBe(expected)
    const aligned = io()
    await runSimulateCommand([...argv, '--trace', 'edge'], aligned.io)
    expect(aligned.out.stdout).not.toBe(expected)
    const bad = io()
    expect(await runSimulateCommand([...argv, '--anchor', 'later'], bad.io)).toBe(2)
    expect(bad.out.stderr).toMatch(/`anchor` must be one of 'clock', 'first-request'; got "later"/)
  })

  test('usage errors answer 2 with the message, never throw', async () => {
    const bad = io()
    expect(await runSimulateCommand(['--limit', '5', '--window', '1s', '--bogus'], bad.io)).toBe(2)
    expect(bad.out.stderr).toMatch(/bogus/)
    const config = io()
    const argv = ['--algorithm', 'gcra', '--limit', 'five', '--window', '1s']
    expect(await runSimulateCommand(argv, config.io)).toBe(2)
    expect(config.out.stderr).toMatch(/`--limit` must be a number; got "five"/)
    const zero = io()
    const argvZero = ['--algorithm', 'gcra', '--limit', '0', '--window', '1s']
    expect(await runSimulateCommand(argvZero, zero.io)).toBe(2)
    expect(zero.out.stderr).toMatch(/`limit` must be a positive integer; got 0/)
    const trace = io()
    expect(
      await runSimulateCommand(
        ['--limit', '5', '--window', '1s', '--trace', '/nonexistent.json'],
        trace.io,
      ),
    ).toBe(2)
    expect(trace.out.stderr).toMatch(/`--trace`/)
  })
})

/** Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into rows of pixels. */
function decodePng(png: Buffer): { width: number; height: number; channels: number; data: Buffer } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]))
  let offset = 8
  let width = 0
  let height = 0
  let channels = 0
  const idat: Buffer[] = []
  while (offset < png.length) {
    const length = png.readUInt32BE(offset)
    const type = png.toString('latin1', offset + 4, offset + 8)
    const body = png.subarray(offset + 8, offset + 8 + length)
    if (type === 'IHDR') {
      width = body.readUInt32BE(0)
      height = body.readUInt32BE(4)
      expect(body[8]).toBe(8) // bit depth
      channels = body[9] === 6 ? 4 : body[9] === 2 ? 3 : 0
      expect(channels).not.toBe(0)
      expect(body[12]).toBe(0) // not interlaced
    } else if (type === 'IDAT') {
      idat.push(body)
    }
    offset += 12 + length
  }
  const raw = inflateSync(Buffer.concat(idat))
  const stride = width * channels
  const data = Buffer.alloc(height * stride)
  for (let row = 0; row < height; row++) {
    const filter = raw[row * (stride + 1)]
    const line = raw.subarray(row * (stride + 1) + 1, (row + 1) * (stride + 1))
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? data[row * stride + i - channels] : 0
      const up = row > 0 ? data[(row - 1) * stride + i] : 0
      const upLeft = row > 0 && i >= channels ? data[(row - 1) * stride + i - channels] : 0
      let predictor = 0
      if (filter === 1) predictor = left
      else if (filter === 2) predictor = up
      else if (filter === 3) predictor = (left + up) >> 1
      else if (filter === 4) {
        const p = left + up - upLeft
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)]
        predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft
      }
      data[row * stride + i] = (line[i] + predictor) & 0xff
    }
  }
  return { width, height, channels, data }
}

/** Pixels within a small distance of `hex` (anti-aliased edges are blends, centres are exact). */
function pixelsNear(image: ReturnType<typeof decodePng>, hex: string): number {
  const target = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
  let n = 0
  for (let i = 0; i < image.data.length; i += image.channels) {
    const distance =
      Math.abs(image.data[i] - target[0]) +
      Math.abs(image.data[i + 1] - target[1]) +
      Math.abs(image.data[i + 2] - target[2])
    if (distance <= 30) n++
  }
  return n
}

/**
 * The few browser globals the page functions use: the test compiles without the DOM lib, and
 * these functions run in Chromium, where `globalThis` has them.
 */
interface BrowserGlobals {
  DOMParser: new () => {
    parseFromString(
      text: string,
      type: string,
    ): {
      documentElement: { nodeName: string }
      querySelectorAll(selector: string): { length: number }
    }
  }
  document: { images: ArrayLike<{ complete: boolean; naturalWidth: number }> }
}

describe('the SVGs draw in a browser', () => {
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 600, height: 300 } })
  })

  afterAll(async () => {
    await browser?.close()
  })

  test('well-formed XML with the expected elements, rendered with both colours', async () => {
    const trace = makeTrace('bursty', { limit: 5, windowMs: 1000 })
    const svg = renderSvg(simulate(trace, { algorithm: 'leaky-bucket', limit: 5, window: '1s' }), {
      title: 'leaky-bucket',
    })
    // The browser's XML parser is strict: any malformed markup yields a <parsererror> document.
    const counts = await page.evaluate((text) => {
      const browserGlobals = globalThis as unknown as BrowserGlobals
      const doc = new browserGlobals.DOMParser().parseFromString(text, 'image/svg+xml')
      const count = (selector: string) => doc.querySelectorAll(selector).length
      return {
        errors: count('parsererror'),
        root: doc.documentElement.nodeName,
        title: count('svg > title'),
        paths: ['admitted', 'rejected', 'departed', 'delay', 'count', 'grid'].map((c) =>
          count(`path.${c}`),
        ),
        limit: count('line.limit'),
      }
    }, svg)
    expect(counts).toEqual({
      errors: 0,
      root: 'svg',
      title: 1,
      paths: [1, 1, 1, 1, 1, 1],
      limit: 1,
    })

    const url = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`
    await page.setContent(`<body style="margin:0;background:#fff"><img src="${url}"></body>`)
    await page.waitForFunction(() => {
      const img = (globalThis as unknown as BrowserGlobals).document.images[0]
      return img.complete && img.naturalWidth > 0
    })
    const png = await page.locator('img').screenshot({ type: 'png' })
    const image = decodePng(png)
    expect([image.width, image.height]).toEqual([480, 200])
    expect(pixelsNear(image, SVG_COLORS.admitted)).toBeGreaterThan(50)
    expect(pixelsNear(image, SVG_COLORS.rejected)).toBeGreaterThan(20)
    // A broken image would be blank: most pixels white, but not all.
    expect(pixelsNear(image, '#ffffff')).toBeLessThan(image.width * image.height)
  })
})
