// core/thread_annotations.h — Clang's thread-safety analysis, as macros that
// vanish under other compilers (after Abseil's and LevelDB's
// port/thread_annotations.h; our own short version). scripts/thread_safety.sh
// compiles core/ registry/ api/ daemon/ sampler/ with clang
// -Wthread-safety -Werror, so a GUARDED_BY member read without its mutex
// fails CI.
//
// libstdc++'s std::mutex carries no annotations: lock through core::Mutex
// and core::MutexLock (core/mutex.h).
#pragma once

#if defined(__clang__)
#define TCL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TCL_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (core::Mutex).
#define CAPABILITY(name) TCL_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a capability for its lifetime (core::MutexLock).
#define SCOPED_CAPABILITY TCL_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with `mu` held.
#define GUARDED_BY(mu) TCL_THREAD_ANNOTATION(guarded_by(mu))
// A pointer member whose pointee is read or written only with `mu` held.
#define PT_GUARDED_BY(mu) TCL_THREAD_ANNOTATION(pt_guarded_by(mu))
// A function the caller must call with these held (exclusively / shared).
#define REQUIRES(...) TCL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) TCL_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// A function the caller must not call with these held (it takes them itself).
#define EXCLUDES(...) TCL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes / gives back a capability (exclusively or shared).
#define ACQUIRE(...) TCL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) TCL_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) TCL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) TCL_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TCL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// Tells the analysis the capability is held here (checked at run time or by reasoning).
#define ASSERT_CAPABILITY(x) TCL_THREAD_ANNOTATION(assert_capability(x))
// A function that returns a reference to the capability.
#define RETURN_CAPABILITY(x) TCL_THREAD_ANNOTATION(lock_returned(x))
// Opts a function out; say why beside it.
#define NO_THREAD_SAFETY_ANALYSIS TCL_THREAD_ANNOTATION(no_thread_safety_analysis)
