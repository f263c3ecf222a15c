#!/usr/bin/env node
'use strict'
/**
 * The test services step of `npm test`: the tests start private redis-server, redis-cli
 * --cluster, memcached and postgres processes, compile the Redis scripts with Lua 5.1 and 5.4, and
 * render the docs' pictures in Chromium. This checks the binaries are on PATH and, when some
 * are missing, installs their Debian packages with apt-get (as root, or through sudo);
 * otherwise it stops with the command to run.
 */
const { execFileSync, spawnSync } = require('node:child_process')

/** Debian packages by the command each provides. */
const PACKAGES = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  memcached: 'memcached',
  // PostgresStore's tests run initdb and postgres (from PATH or /usr/lib/postgresql/*/bin).
  postgres: 'postgresql',
  initdb: 'postgresql',
  // The Redis scripts are compiled by both Lua versions servers run (5.1: Redis, Valkey; 5.4:
  // Dragonfly): packages/redis/test/portable-scripts.test.ts.
  'luac5.1': 'lua5.1',
  'luac5.4': 'lua5.4',
  chromium: 'chromium',
}

// Debian keeps the PostgreSQL server's binaries in /usr/lib/postgresql/<version>/bin, off PATH.
const onPath = (command) =>
  spawnSync('sh', ['-c', `command -v ${command} || ls /usr/lib/postgresql/*/bin/${command}`])
    .status === 0

function missingCommands() {
  return Object.keys(PACKAGES).filter((command) => !onPath(command))
}

function main() {
  const missing = missingCommands()
  if (missing.length === 0) return
  const packages = [...new Set(missing.map((command) => PACKAGES[command]))]
  const root = process.getuid?.() === 0
  const sudo = !root && onPath('sudo') ? ['sudo'] : []
  if (!onPath('apt-get') || (!root && sudo.length === 0)) {
    console.error(
      `The tests need ${missing.join(', ')} on PATH. Install them with: sudo apt-get install -y ${packages.join(' ')}`,
    )
    process.exit(1)
  }
  console.error(`Installing ${packages.join(', ')} for the tests (apt-get)...`)
  const run = (args) => {
    const [command, ...rest] = [...sudo, ...args]
    execFileSync(command, rest, {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    })
  }
  run(['apt-get', 'update', '-qq'])
  run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages])
  const still = missingCommands()
  if (still.length > 0) {
    console.error(`apt-get did not provide ${still.join(', ')}`)
    process.exit(1)
  }
}

main()
