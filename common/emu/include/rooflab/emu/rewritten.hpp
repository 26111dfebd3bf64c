// What the CPU backend's source rewriter (common/emu/rewrite/rewrite.cpp) turns CUDA syntax into. Each
// generated wrapper includes this after the prelude (runtime.hpp) and before the student's .cu file:
//
//   k<<<g, b, smem, stream>>>(args)  ->  launch_site(&k, "k", "x,y,n", [&](auto... a) { k(a...); }, g, b, smem,
//                                                    stream)(args)   ("x,y,n": k's parameter names, "" if unknown)
//   extern __shared__ T name[];      ->  auto* const name = dynamic_shared<T>();
//   __shared__ T name[N];            ->  auto& name = static_shared<T[N]>([] {}, "name", alignment);
//   f<<<g, b>>>(args), f not a kernel's name (a function pointer, table[i], (c ? a : b), pick(x))
//                                    ->  launch_pointer(f, "f", g, b, smem, stream)(args)
//   reinterpret_cast<T*>(e)[i], *reinterpret_cast<T*>(e), reinterpret_cast<T*>(e)->m
//                                    ->  the same with aligned_reinterpret_cast<T*>(e, "T*")
//   k<<<g, b>>>(NULL, y, 0)          ->  a launch of k whose literal 0 / NULL arguments are NullOrZero{}
//   __global__ void __launch_bounds__(N, ...) k(...) {
//                                    ->  the same, its body starting with check_launch_bounds(first_bound(N, ...));
//                                        and, where `&k` names one function, LaunchBounds<&k, N>::registered
#pragma once

#include <rooflab/emu/launch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace rooflab::emu::detail {

// ---- launches ----

// The first statement of a kernel declared __launch_bounds__(max_threads, ...): ptxas fits its registers to
// blocks of at most max_threads threads, and a GPU refuses to launch it with more (the kernel's
// maxThreadsPerBlock). The backend's launch then fails as well, naming the bound (src/scheduler.cpp). It is what
// holds a launch to the bound where the launch has no address to look the bound up by (a template whose
// arguments the call deduces, a kernel a host function of its name overloads).
void check_launch_bounds(long long max_threads);
// The bound of a kernel, registered before any launch for cudaFuncGetAttributes (maxThreadsPerBlock), the
// occupancy calculator (and so cudaOccupancyMaxPotentialBlockSize) and the launch itself, which then fails
// before any block runs. The rewriter names LaunchBounds<&kernel, N>::registered in the body of each kernel
// with one address (`&k`, `&k<D, G>` in a template's): a static data member of a class template, instantiated
// with every instance of the kernel the program uses and initialized as the program starts.
bool register_launch_bounds(const void* kernel, long long max_threads);
template <auto Kernel, long long MaxThreads>
struct LaunchBounds {
  inline static bool registered = register_launch_bounds(reinterpret_cast<const void*>(Kernel), MaxThreads);
};
// __launch_bounds__'s first argument (the threads), given all of them as written (blocks per SM, a cluster's):
// the C++ parser, not the rewriter, tells their commas from a template argument list's.
template <typename... Rest>
constexpr long long first_bound(long long max_threads, Rest&&...) {
  return max_threads;
}

// A literal `0` or `NULL` written as a launch's argument (`k<<<g, b>>>(NULL, y, n)`): nvcc passes a null
// pointer constant to a pointer parameter and a zero to a number; forwarded through the launch it would be
// an int, which no pointer parameter takes. The rewriter writes this value instead: it converts to either.
// (A number parameter takes it through `int`, as it took the literal: one conversion function for every
// number type, so that a type with several constructors from numbers, __half, is not ambiguous.)
struct NullOrZero {
  template <typename T, typename = std::enable_if_t<std::is_pointer_v<T> || std::is_member_pointer_v<T> ||
                                                    std::is_null_pointer_v<T>>>
  constexpr operator T() const {
    return nullptr;
  }
  constexpr operator int() const { return 0; }
};

template <typename... P>
std::tuple<std::decay_t<P>...> parameter_tuple(void (*)(P...));

// One `<<<...>>>` launch, waiting for its arguments. `kernel` is the kernel's address, or nullptr for a
// kernel template whose arguments deduce its template arguments; `body` calls the kernel with its
// arguments, `[&](auto... a) { k(a...); }`, so that overload resolution and deduction happen as in the source.
template <typename Kernel, typename Body>
class LaunchSite {
 public:
  LaunchSite(Kernel kernel, const char* written, const char* parameters, Body body, dim3 grid, dim3 block,
             std::size_t dynamic_smem, cudaStream_t stream)
      : kernel_(kernel),
        written_(written),
        parameters_(parameters),
        body_(std::move(body)),
        grid_(grid),
        block_(block),
        smem_(dynamic_smem),
        stream_(stream) {}

  template <typename... Args>
  void operator()(Args&&... args) const {
    using Decayed = std::tuple<std::decay_t<Args>...>;
    if constexpr (std::is_pointer_v<Kernel>) {
      // A known kernel: the arguments become its parameter types once, at the launch, as in CUDA. (With
      // default arguments, or arguments that convert only in the call itself, they are copied as given.)
      using Params = decltype(parameter_tuple(kernel_));
      const void* address = reinterpret_cast<const void*>(kernel_);
      if constexpr (std::tuple_size_v<Params> == sizeof...(Args) && std::is_constructible_v<Params, Args&&...>) {
        run(address, kernel_name(address), Params(std::forward<Args>(args)...));
      } else {
        run(address, kernel_name(address), Decayed(std::forward<Args>(args)...));
      }
    } else {
      run(nullptr, deduced_kernel_name(written_, {typeid(std::decay_t<Args>).name()...}),
          Decayed(std::forward<Args>(args)...));
    }
  }

 private:
  template <typename Tuple>
  void run(const void* address, const std::string& name, const Tuple& params) const {
    // Pointer arguments checked (and their element sizes noted for out-of-bounds reports), the launch ordered.
    prepare_launch(stream_, name, parameters_, params, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
    // Every CUDA thread's call copies the parameters again (`auto... a` takes them by value): a thread that
    // modifies a parameter modifies its own copy, as on a GPU.
    auto body = [&] { std::apply(body_, params); };
    const cudaError_t err = run_grid(address, grid_, block_, smem_, body, name.c_str());
    set_last_error(err);
  }

  Kernel kernel_;
  const char* written_;
  const char* parameters_;  // "x,y,n", for out-of-bounds and host-pointer reports
  Body body_;
  dim3 grid_;
  dim3 block_;
  std::size_t smem_;
  cudaStream_t stream_;
};

// The grid runs when the launch is made; its stream orders it among the streams' work (src/ordering.cpp), for
// the reports of what a GPU would not have finished.
template <typename Kernel, typename Body>
LaunchSite<Kernel, Body> launch_site(Kernel kernel, const char* written, const char* parameters, Body body, dim3 grid,
                                     dim3 block, std::size_t dynamic_smem = 0, cudaStream_t stream = nullptr) {
  return LaunchSite<Kernel, Body>(kernel, written, parameters, std::move(body), grid, block, dynamic_smem, stream);
}

// A launch through something other than a kernel's name (a function pointer variable, table[i], a
// conditional, a call): the expression is evaluated once, before the launch, and must give a __global__
// function's address; every CUDA thread calls the kernel through that pointer.
// What launch_pointer gives for an expression that is not a kernel pointer: the static_assert is the only
// error the compiler reports, not a cascade from the launch machinery.
struct NotAKernel {
  template <typename... Args>
  void operator()(Args&&...) const {}
};

template <typename Kernel>
auto launch_pointer(Kernel kernel, const char* written, dim3 grid, dim3 block, std::size_t dynamic_smem = 0,
                    cudaStream_t stream = nullptr) {
  constexpr bool is_kernel = std::is_pointer_v<Kernel> && std::is_function_v<std::remove_pointer_t<Kernel>>;
  static_assert(is_kernel, "rooflab emu: the expression before <<< does not give a pointer to a __global__ "
                           "function (the launch is on the line that 'required from here' names)");
  if constexpr (is_kernel) {
    auto body = [kernel](auto... args) { kernel(args...); };
    return launch_site(kernel, written, "", body, grid, block, dynamic_smem, stream);
  } else {
    return NotAKernel{};
  }
}

// ---- misaligned pointers (src/alignment.cpp) ----

// Inside a kernel: reports (throws KernelError) that `address` is not aligned to `align` bytes for `type`
// (an object of `size` bytes). Host code is left alone, and so is a pointer to the end of a cudaMalloc
// allocation (fewer than `size` bytes left: a loop with nothing left to do makes it and never uses it).
void misaligned_pointer(const void* address, std::size_t align, std::size_t size, const char* type, const char* file,
                        unsigned line);

// `reinterpret_cast<T*>(e)` dereferenced where it is made, in a function body. A GPU faults on a
// misaligned access through T* (a float4 load needs 16 bytes of alignment); the host compiler may split the
// access into scalar loads and never fault, so the pointer is checked here, just before the access.
template <typename To, typename From>
To aligned_reinterpret_cast(From from, const char* type, const char* file = __builtin_FILE(),
                            unsigned line = __builtin_LINE()) {
  if constexpr (std::is_pointer_v<To> && std::is_pointer_v<From>) {
    using Element = std::remove_cv_t<std::remove_pointer_t<To>>;
    if constexpr (std::is_object_v<Element> && is_complete<Element>::value) {
      if constexpr (alignof(Element) > 1) {
        const auto address = reinterpret_cast<std::uintptr_t>(from);
        if (address % alignof(Element) != 0) {
          misaligned_pointer(reinterpret_cast<const void*>(address), alignof(Element), sizeof(Element), type, file,
                             line);
        }
      }
    }
  }
  return reinterpret_cast<To>(from);
}

// ---- shared memory (shared_memory.cpp) ----

// The running block's storage for one static __shared__ declaration (`key` tells declarations apart):
// `bytes` long, poisoned when the block first reaches it, ending against a guard page.
void* static_shared_storage(const void* key, std::size_t bytes, std::size_t align, const char* name, const char* file,
                            unsigned line);

// `__shared__ T name[N];` in a function body. `Site` is the type of a lambda written at the declaration:
// unique to the declaration and to each instantiation of an enclosing template, so each gets its own key.
template <typename T, typename Site>
T& static_shared(Site, const char* name, std::size_t align, const char* file = __builtin_FILE(),
                 unsigned line = __builtin_LINE()) {
  static const char key = 0;
  return *static_cast<T*>(static_shared_storage(&key, sizeof(T), std::max(alignof(T), align), name, file, line));
}

// `extern __shared__ T name[];` in a function body: every such declaration of a kernel aliases the launch's
// dynamic shared memory, as in CUDA.
template <typename T>
T* dynamic_shared() {
  return static_cast<T*>(::rooflab::emu::dynamic_shared_memory());
}

// `extern __shared__ T name[];` at namespace scope: converts to the running block's buffer wherever used.
template <typename T>
struct DynamicSharedArray {
  operator T*() const { return dynamic_shared<T>(); }
};

}  // namespace rooflab::emu::detail

// The rewriter replaced every __shared__ of the .cu file it could see. One it could not see (hidden in a
// macro) must not compile into something that silently behaves differently from a GPU.
#undef __shared__
#define __shared__ rooflab_emu_error_a_shared_declaration_the_rewriter_could_not_see_write_it_out_in_the_cu_file
