/**
 * Jest global setup: makes sure redis-server, memcached and chromium exist before the tests run.
 */
import { execFileSync, spawnSync } from 'node:child_process'

/** Debian packages the tests start private servers from, by the command each provides. */
const SERVER_PACKAGES: Readonly<Record<string, string>> = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  memcached: 'memcached',
  chromium: 'chromium',
}

function missingCommands(): string[] {
  return Object.keys(SERVER_PACKAGES).filter(
    (command) => spawnSync('sh', ['-c', `command -v ${command}`]).status !== 0,
  )
}

/**
 * Jest globalSetup. The tests start their own redis-server and memcached processes (per test
 * file, see ./servers); this makes sure the binaries exist so that `npm test` works on a fresh
 * Debian machine as written: as root with apt-get, missing packages are installed; otherwise
 * the run stops at once with the command to run.
 */
export default async function globalSetup(): Promise<void> {
  const missing = missingCommands()
  if (missing.length === 0) return
  const packages = [...new Set(missing.map((command) => SERVER_PACKAGES[command]))]
  const canInstall =
    process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get']).status === 0
  if (!canInstall) {
    throw new Error(
      `The tests need ${missing.join(', ')} on PATH. Install them with: sudo apt-get install -y ${packages.join(' ')}`,
    )
  }
  process.stderr.write(`\nInstalling ${packages.join(', ')} for the tests (apt-get)...\n`)
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' })
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  const still = missingCommands()
  if (still.length > 0) throw new Error(`apt-get did not provide ${still.join(', ')}`)
}
