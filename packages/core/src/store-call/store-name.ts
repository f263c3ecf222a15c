/**
 * Owns the names stores go by in log lines and errors. Not the class's `name`: a bundler may
 * rename classes (core's CommonJS build made the local tier `_class3` and MemoryStore
 * `_class5`), so stores, or their classes, are given their name here (each store's module names
 * its class, so this one imports no store).
 */
const names = new WeakMap<object, string>()

/** Names a store, or every store of a class, in log lines and errors. */
export function nameStore(storeOrClass: object, name: string): void {
  names.set(storeOrClass, name)
}

/** `store`'s name: its own, its class's, else the class name as the code has it. */
export function storeName(store: object): string {
  const own = names.get(store)
  if (own !== undefined) return own
  const constructor = (store as { constructor?: unknown }).constructor
  if (typeof constructor !== 'function') return 'the store'
  const named = names.get(constructor)
  if (named !== undefined) return named
  const name = constructor.name
  return name === '' || name === 'Object' ? 'the store' : name
}
