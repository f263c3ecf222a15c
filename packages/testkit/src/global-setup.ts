/**
 * Jest globalSetup. Deliberately empty: servers are started per test file (see ./servers), so a
 * test file that needs none pays nothing, and a missing `redis-server`/`memcached` is reported,
 * with the package to install, only by the tests that need it.
 */
export default async function globalSetup(): Promise<void> {}
