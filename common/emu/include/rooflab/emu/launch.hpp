// Launching a kernel on the CPU backend: `k<<<grid, block, smem, stream>>>(args)` (rewritten into a
// launch_site call, rooflab/emu/rewritten.hpp) and rooflab::launch (common/include/rooflab/launch.hpp) both
// end here. Arguments are copied as CUDA copies them (to the kernel's decayed parameter types),
// pointer arguments are checked to be device allocations, and the grid runs to completion before this
// returns (streams are synchronous on the CPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace rooflab::emu {

// A bug found while running a kernel: names the kernel, block, thread and source line where known.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Schedule { forward, reverse, random };
// The order of threads between barriers (default from ROOFLAB_EMU_SCHEDULE): tests can set it directly.
void set_schedule(Schedule schedule, std::uint64_t seed = 20261122);
Schedule schedule();
// OS threads running blocks (default from ROOFLAB_EMU_WORKERS, else 1).
void set_workers(int workers);

// This block's dynamic shared memory: exactly the bytes the launch asked for, 16-byte aligned.
void* dynamic_shared_memory();

// Allocation bookkeeping (runtime_api.cpp): is `p` inside memory a kernel may touch?
bool is_device_pointer(const void* p);

std::string kernel_name(const void* kernel);
// The name of a kernel template launched without template arguments (no address to look up): the name as
// written and the argument types that deduce them, "axpy<...>(float, float*, float*, int)".
std::string deduced_kernel_name(const char* written, std::initializer_list<const char*> mangled_argument_types);

// What ran since the process started, for tests that must know the kernel under test did the work (a
// submission that copies the inputs to the host, computes there and copies the result back launches
// nothing, or launches far fewer threads than the problem needs).
struct Activity {
  unsigned long long launches = 0;        // kernel launches that ran (configuration errors excluded)
  unsigned long long threads = 0;         // CUDA threads launched, summed over launches
  unsigned long long memcpy_to_host = 0, memcpy_to_device = 0, memcpy_device_to_device = 0, memsets = 0;  // calls
  unsigned long long bytes_to_host = 0, bytes_to_device = 0, bytes_device_to_device = 0;
};
// Totals since the process started (thread-safe). Copies count by their real direction (cudaMemcpyDefault
// resolved by the pointers; pinned cudaMallocHost memory is host memory); symbol copies count as copies to
// or from the device; host-to-host copies are not counted.
Activity activity();
// Device memory (cudaMalloc) live now, and the most that was live at once since the last reset (the
// process start, or reset_peak_device_bytes_allocated(), which sets it to what is live now): exact, as every
// allocation goes through the backend. rooflab/testing/device_memory.hpp reads them.
std::size_t device_bytes_allocated();
std::size_t peak_device_bytes_allocated();
void reset_peak_device_bytes_allocated();
// Demangled names of every kernel launched so far, in order of first launch, each once.
std::vector<std::string> kernels_launched();
// Code no test ran (src/kernels.cpp): every kernel instance compiled into this process (the function
// symbols named as a __global__ function of a .cu file the rewriter saw), sorted; the kernels launched after
// the first `launches` launches of the process (kernel_launch_count() before a call, for the kernels that
// call started), in order of first launch; and the instances defined but never launched.
std::vector<std::string> kernels_defined();
unsigned long long kernel_launch_count();
std::vector<std::string> kernels_launched_since(unsigned long long launches);
std::vector<std::string> kernels_never_launched();

// The shapes of a launcher's launches, without running them (the performance model's grids: `rooflab inspect`
// predicts a kernel at the size the perf tests time, where running it here would take minutes). While a
// LaunchShapes lives, every launch in the process is checked and counted as usual (an invalid configuration still
// throws) and recorded, but no block runs: what the kernels would write is not written. Not for lab code.
struct LaunchShape {
  std::string kernel;  // demangled, as kernels_launched() names it
  dim3 grid;
  dim3 block;
  std::size_t dynamic_smem = 0;
  // Per argument, in the kernel's parameter order: the bytes from a pointer argument to the end of the device
  // allocation it points into (what the kernel can reach through it), 0 for any other argument. The
  // performance model tells a small array every thread rereads (a bias vector, the x of a GEMV) from a stream.
  std::vector<std::size_t> reach;
  // Per argument: an integer argument's value (a length, a batch), nothing for any other. The performance model
  // counts the trips of loops whose bounds come from them (a staging loop's pieces for a batch of 64).
  std::vector<std::optional<long long>> scalars;
};
class LaunchShapes {
 public:
  LaunchShapes();
  ~LaunchShapes();
  LaunchShapes(const LaunchShapes&) = delete;
  LaunchShapes& operator=(const LaunchShapes&) = delete;
  std::vector<LaunchShape> taken() const;  // in launch order
};

// Read accounting for timed runs (the dry run of the perf tests): while a watch is on, the data pages of the
// watched ranges' allocations stay closed during launches, and the first touch of a page by a kernel (or a
// runtime copy out of it) opens that page and counts its bytes inside the range. So a launcher that replays
// an answer it kept from an earlier call touches none of its inputs, whatever its kernels write. Page
// granularity: a kernel that reads one element per page counts as reading the page. One watch at a time, at
// most 8 ranges, each inside one cudaMalloc allocation.
struct WatchedRange {
  const void* data = nullptr;
  std::size_t bytes = 0;
};
void begin_read_watch(const std::vector<WatchedRange>& ranges);
// Ends the watch: the bytes of each range (in order) that were touched since it began.
std::vector<std::size_t> end_read_watch();

// Streams run synchronously here; what would order their work on a GPU is kept (src/ordering.cpp). For an
// interval timed between two recorded events: the first operation issued inside it that the end event does not
// cover on a GPU (work a launcher put on another stream and never ordered back), named with its stream; ""
// when everything is covered. The timing harness fails such a sample.
std::string work_not_covered(cudaEvent_t start, cudaEvent_t stop);
// Two operations on streams that nothing orders with each other, touching the same bytes where either may
// write them (a race between streams: on a GPU they may run at once; a launch's bytes are the pages it touched
// where another stream could overlap it, else its allocations whole), are reported on stderr as they are issued
// (the first few); this is the last such report, "" when none since the process began.
std::string last_unordered_pair();

// Device allocations (cudaMalloc, cudaMallocPitch) made since the process began: the timing harness fails a
// timed sample during which the launcher allocated (on a GPU an allocation per call costs more than a small
// kernel, and the first call's differs from the others').
unsigned long long device_allocations_made();

// Race mode (the ThreadSanitizer build, rooflab::emu_race): data races reported so far in this process and
// the last report's summary line ("data race kernels.cu:35 in my_kernel(...)"). Always 0 in the normal build.
int races_reported();
std::string last_race_summary();
bool race_mode();
// Race mode: CUDA threads that ran on a TSan fiber a thread of an earlier launch had finished on (reused:
// creating one costs about half a millisecond); never one of the same launch. Always 0 in the normal build.
unsigned long long race_fibers_reused();

namespace detail {
// What every CUDA thread of a launch calls: a callable borrowed for the launch (the grid runs to its end
// before run_grid returns), as an object's address and one function that calls it. Not std::function: each
// launch site would compile a copy, move and destroy of its callable that nothing uses.
class ThreadBody {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, ThreadBody>>>
  ThreadBody(F& body) noexcept  // implicit: a launch passes its lambda where a body is asked
      : object_(static_cast<void*>(&body)), call_([](void* object) { (*static_cast<F*>(object))(); }) {}
  void operator()() const { call_(object_); }

 private:
  void* object_;
  void (*call_)(void*);
};

// Validates the configuration, then runs every thread of every block; throws KernelError on a bug or a bad
// configuration (whose message names the cudaError_t a GPU would return). Returns cudaSuccess otherwise.
// `kernel` (may be null) finds the kernel's name and its cudaFuncSetAttribute limits; `name`, if given,
// is the name reports use.
cudaError_t run_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                     ThreadBody thread_body, const char* name = nullptr);
void set_last_error(cudaError_t err);
// run_grid for cudaLaunchCooperativeKernel: every block resident at once, so grid.sync() is a barrier of the
// whole grid. A grid larger than the pretend GPU holds at once returns cudaErrorCooperativeLaunchTooLarge
// without running anything, as on a GPU.
cudaError_t run_cooperative_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                                 ThreadBody thread_body, const char* name = nullptr);
// Cooperative groups beyond a warp (scheduler.cpp, for rooflab/emu/cooperative_groups.hpp): the sync of the
// block's threads [first, first + count); 32 bytes per thread of the block for tile collectives; grid.sync().
void tile_sync(unsigned first, unsigned count, const char* file, unsigned line);
void* tile_scratch();
void grid_sync(const char* file, unsigned line);
bool grid_is_cooperative();

// Device memory is closed to host code (PROT_NONE) except while a kernel runs, as on a GPU where host code
// that dereferences a device pointer faults. One of these opens every device allocation while it lives:
// run_grid holds one for the launch, and backend code that computes on device memory from the host (an
// emulated library call) must hold one too. Not for lab code.
class DeviceMemoryOpen {
 public:
  DeviceMemoryOpen();
  ~DeviceMemoryOpen();
  DeviceMemoryOpen(const DeviceMemoryOpen&) = delete;
  DeviceMemoryOpen& operator=(const DeviceMemoryOpen&) = delete;
};

// src/kernels.cpp: each generated wrapper registers the __global__ names of its .cu file ("a,b,c"); the
// scheduler notes each launch by the name reports use; "k" of "void ns::k<8>(float*)", "" for a symbol that
// is not a function itself (a lambda inside it, a clone).
int register_kernels(const char* file, const char* names);
void note_kernel_launch(const std::string& name);
// While a LaunchShapes lives: records the launch's shape and returns true (the launch then runs no block).
bool note_launch_shape(const std::string& name, dim3 grid, dim3 block, std::size_t dynamic_smem);
std::string kernel_base_name(const std::string& demangled);

// One argument of a launch as the backend's checks see it. Pointer arguments must point into memory a kernel
// may touch (cudaMalloc, or pinned cudaMallocHost memory): a host pointer "works" on the CPU and faults or
// reads garbage on a GPU. (Pointers inside structs are not checked.) Other arguments are not described.
struct LaunchArgument {
  const void* pointer = nullptr;              // an object pointer's value (null too), else nullptr
  bool is_pointer = false;                    // a pointer to an object type
  bool writable = false;                      // a pointer to non-const: memory the launch may write
  std::size_t element_size = 0;               // 0 for a pointer to an incomplete type
  const std::type_info* element_type = nullptr;
  std::optional<long long> integer;           // an integer (or enum) argument's value
};

// Whether T is a complete type (its size is known), in C++17.
template <typename T, typename = void>
struct is_complete : std::false_type {};
template <typename T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <typename T>
LaunchArgument describe_argument(const T& value) {
  LaunchArgument argument;
  if constexpr (std::is_pointer_v<T> && std::is_object_v<std::remove_pointer_t<T>>) {
    using Element = std::remove_cv_t<std::remove_pointer_t<T>>;
    argument.pointer = static_cast<const void*>(value);
    argument.is_pointer = true;
    argument.writable = !std::is_const_v<std::remove_pointer_t<T>>;
    if constexpr (is_complete<Element>::value) {
      argument.element_size = sizeof(Element);
      argument.element_type = &typeid(Element);
    }
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    argument.integer = static_cast<long long>(value);
  }
  return argument;
}

// Before a grid runs (src/runtime_api.cpp): starts the launch's round of pointer arguments, checks each
// pointer argument (KernelError naming the kernel and the parameter, `parameters` being the kernel's
// parameter names "a,b,n" where the rewriter saw them, else nullptr), then orders the launch on `stream`
// among the streams' work (src/ordering.cpp) with the device memory its pointers reach. Out of line and not
// a template: every launch site of every wrapper would otherwise compile its own copy of the checks and
// their messages (and, in the plain builds, the alignment checks of all that harness code).
void prepare_launch(cudaStream_t stream, const std::string& name, const char* parameters,
                    const LaunchArgument* arguments, std::size_t count);
template <typename Tuple, std::size_t... I>
void prepare_launch(cudaStream_t stream, const std::string& name, const char* parameters, const Tuple& params,
                    std::index_sequence<I...>) {
  const LaunchArgument arguments[sizeof...(I) + 1] = {describe_argument(std::get<I>(params))..., {}};
  prepare_launch(stream, name, parameters, arguments, sizeof...(I));
}
}  // namespace detail

namespace detail {
template <typename... P, std::size_t... I>
std::tuple<std::decay_t<P>...> arguments_from(void** args, std::index_sequence<I...>) {
  return std::tuple<std::decay_t<P>...>(*static_cast<std::decay_t<P>*>(args[I])...);
}

// cudaLaunchCooperativeKernel(kernel, grid, block, args, smem, stream), as the source rewriter passes it (a
// `(void*)kernel` cast dropped, so that the kernel's parameter types are known): args[i] points at the i-th
// argument, as in CUDA. The grid runs at once; the stream orders it (src/ordering.cpp).
template <typename... P>
cudaError_t cooperative_launch(void (*kernel)(P...), dim3 grid, dim3 block, void** args, std::size_t dynamic_smem = 0,
                               cudaStream_t stream = nullptr) {
  const void* address = reinterpret_cast<const void*>(kernel);
  const std::string name = kernel_name(address);
  if (args == nullptr && sizeof...(P) > 0) {
    throw KernelError("cudaLaunchCooperativeKernel(" + name + ", ...): args is null but the kernel takes " +
                      std::to_string(sizeof...(P)) + " arguments (cudaErrorInvalidValue on a GPU)");
  }
  const auto params = arguments_from<P...>(args, std::index_sequence_for<P...>{});
  prepare_launch(stream, name, nullptr, params, std::index_sequence_for<P...>{});
  auto body = [&] { std::apply(kernel, params); };
  const cudaError_t err = run_cooperative_grid(address, grid, block, dynamic_smem, body, name.c_str());
  set_last_error(err);
  return err;
}

// Anything else as the first argument: a pointer whose kernel the backend cannot see.
template <typename T>
cudaError_t cooperative_launch(T*, dim3, dim3, void**, std::size_t = 0, cudaStream_t = nullptr) {
  static_assert(sizeof(T*) == 0,
                "rooflab emu: cudaLaunchCooperativeKernel's first argument must name the kernel (k, &k, k<8>, or "
                "any of these cast to void*): the CPU backend calls it with the arguments args points at, and "
                "needs its parameter types for that");
  return cudaErrorInvalidDeviceFunction;
}
}  // namespace detail

template <typename... KernelArgs, typename... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t dynamic_smem, cudaStream_t stream,
            Args&&... args) {
  static_assert(sizeof...(KernelArgs) == sizeof...(Args), "wrong number of kernel arguments");
  // Copies, converted to the parameter types, as the CUDA launch does.
  const std::tuple<std::decay_t<KernelArgs>...> params(std::forward<Args>(args)...);
  const void* address = reinterpret_cast<const void*>(kernel);
  const std::string name = kernel_name(address);
  detail::prepare_launch(stream, name, nullptr, params, std::index_sequence_for<KernelArgs...>{});
  // Each CUDA thread's call copies the parameters again (they are by value): a thread that modifies one
  // modifies its own copy, as on a GPU.
  auto body = [&] { std::apply(kernel, params); };
  const cudaError_t err = detail::run_grid(address, grid, block, dynamic_smem, body, name.c_str());
  detail::set_last_error(err);
}

}  // namespace rooflab::emu
