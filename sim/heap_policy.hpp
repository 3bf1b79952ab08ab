#pragma once
// How the process's heap gives memory back to the kernel: a simulation run is the
// executable's whole job, so freed memory is kept for the next variant.

namespace trainsim::sim {

// A sweep or search evaluates thousands of variants in one process, each allocating and
// freeing a few megabytes. glibc by default returns the freed top of the heap to the kernel
// whenever more than 128 KiB is free there, and faults it in again page by page for the
// next variant: measured on the GPT-3 example, 240 k page faults and about twice the time
// per fast evaluation. Executables call this once at start (the trainsim command, the
// benchmarks); it keeps up to 512 MiB of freed heap and serves blocks below 32 MiB (glibc's
// largest mmap threshold) from the heap. Nothing on C libraries other than glibc.
// Where CMake links mimalloc into the executable (TRAINSIM_MIMALLOC) glibc's heap serves
// nothing and the setting is moot: mimalloc keeps freed pages per thread for reuse itself
// (the search: 20.8 k minor faults against glibc's 16.4 k with this setting).
void keep_freed_heap_memory();

}  // namespace trainsim::sim
