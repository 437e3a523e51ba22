/*
 * strata_isolation.h: asks the Swift concurrency runtime whether the caller runs on an
 * executor (an actor's), without trapping when it does not.
 *
 * Swift offers only trapping checks (`preconditionIsolated`, `assumeIsolated`), but a
 * realm confined to an actor must *throw* `incorrectThread` from its throwing APIs when
 * used elsewhere. The runtime's `swift_task_isCurrentExecutorWithFlags` (Swift 6.2 and
 * later; the standard library calls it from inlinable code, so it is ABI) answers with
 * flags 0 ("must not crash"). It is declared weak: with an older runtime it is absent and
 * the caller falls back to a trapping check. Both take a `SerialExecutorRef` (two words),
 * passed with the Swift calling convention.
 */
#ifndef STRATA_ISOLATION_H
#define STRATA_ISOLATION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const void *identity;
    uintptr_t implementation;
} strata_executor_ref;

#if __has_attribute(swiftcall)
_Bool swift_task_isCurrentExecutorWithFlags(strata_executor_ref executor, uint64_t flags)
    __attribute__((swiftcall, weak));

/// 1: the caller runs on `executor`; 0: it does not; -1: the runtime cannot say without
/// trapping (older than Swift 6.2).
static inline int strata_is_current_executor(const void *identity, uintptr_t implementation) {
    if (!swift_task_isCurrentExecutorWithFlags) return -1;
    strata_executor_ref ref = { identity, implementation };
    return swift_task_isCurrentExecutorWithFlags(ref, 0) ? 1 : 0;
}

/* The task the caller runs in (the runtime's `swift_task_getCurrent`, which the standard
 * library's inlinable `withUnsafeCurrentTask` calls: ABI), neither retained nor released:
 * a realm confined to a task compares it with its owner's address on every access, where
 * `withUnsafeCurrentTask` retained and released the task each time. */
const void *swift_task_getCurrent(void) __attribute__((swiftcall, weak));

/// 1 when `strata_current_task` can answer (the runtime has the entry point).
static inline int strata_can_read_current_task(void) { return swift_task_getCurrent != 0; }

/// The current task's address, or NULL outside a task.
static inline const void *strata_current_task(void) { return swift_task_getCurrent(); }
#else
static inline int strata_is_current_executor(const void *identity, uintptr_t implementation) {
    (void)identity; (void)implementation;
    return -1;
}
static inline int strata_can_read_current_task(void) { return 0; }
static inline const void *strata_current_task(void) { return 0; }
#endif

#ifdef __cplusplus
}
#endif

#endif
