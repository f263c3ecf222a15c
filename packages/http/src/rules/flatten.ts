/**
 * Owns the flat form of a descriptor tree: one record per descriptor, depth first, each with its
 * depth. The compiler reads this form, so a tree can be compiled in slices (a reload hands the
 * main thread a few hundred descriptors at a time) as well as at once.
 */
import type { DescriptorConfig } from './document'

/** One descriptor without its children; `depth` 0 is a top-level descriptor. */
export interface FlatDescriptor {
  readonly depth: number
  readonly descriptor: Omit<DescriptorConfig, 'descriptors'> & { readonly hasChildren: boolean }
}

/** The descriptors in file order (a parent before its children), each with its depth. */
export function flattenDescriptors(descriptors: readonly DescriptorConfig[]): FlatDescriptor[] {
  const out: FlatDescriptor[] = []
  // An explicit stack: a deeply nested file must not overflow the call stack.
  const stack: { list: readonly DescriptorConfig[]; next: number }[] = [
    { list: descriptors, next: 0 },
  ]
  while (stack.length > 0) {
    const top = stack[stack.length - 1]
    if (top.next === top.list.length) {
      stack.pop()
      continue
    }
    const { descriptors: children, ...own } = top.list[top.next++]
    const hasChildren = children !== undefined && children.length > 0
    out.push({ depth: stack.length - 1, descriptor: { ...own, hasChildren } })
    if (hasChildren) stack.push({ list: children, next: 0 })
  }
  return out
}
