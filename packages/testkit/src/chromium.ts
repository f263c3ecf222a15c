// Launches the machine's Chromium headless for the tests that render SVG as a browser does.
import { chromium, type Browser } from 'playwright-core'

/** Debian's chromium, quiet: no GPU, sandbox, first-run or background network. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
}
