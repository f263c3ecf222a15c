/**
 * Jest global setup: checks that redis-server, redis-cli, memcached, postgres, initdb and
 * chromium are on PATH (Postgres's: or in Debian's /usr/lib/postgresql/<version>/bin) before
 * any test starts one. Installing them is a step of its own (scripts/test-services.js,
 * which `npm test` runs first), not hidden in jest.
 */
import { spawnSync } from 'node:child_process'

const COMMANDS = ['redis-server', 'redis-cli', 'memcached', 'postgres', 'initdb', 'chromium']

export default function globalSetup(): void {
  const missing = COMMANDS.filter(
    (command) =>
      spawnSync('sh', ['-c', `command -v ${command} || ls /usr/lib/postgresql/*/bin/${command}`])
        .status !== 0,
  )
  if (missing.length > 0) {
    throw new Error(
      `The tests need ${missing.join(', ')} on PATH: run \`node scripts/test-services.js\` (as root or with sudo, it installs them with apt-get), or \`npm test\`, which runs it first.`,
    )
  }
}
