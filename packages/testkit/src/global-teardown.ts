/**
 * Jest globalTeardown. Nothing to do: each test file stops its servers in afterAll, and the exit
 * and signal hooks of ./servers kill whatever a crashed or careless test file left running.
 */
export default async function globalTeardown(): Promise<void> {}
