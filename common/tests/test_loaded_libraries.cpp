// The loaded-library check (rooflab/detail/loaded_libraries.hpp): what a test process has loaded, against what its
// lab forbids. Two stand-in libraries: libcudnn.so is linked into this binary (as the GPU binaries link
// cuBLAS: never the student's doing), libcublas.so is opened at run time (as a student's dlopen would).
#include <rooflab/detail/loaded_libraries.hpp>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

extern "C" int rooflab_fake_library();  // the linked stand-in (ROOFLAB_FAKE_LINKED)

namespace {

using rooflab::loaded_libraries::forbidden_loaded;
using rooflab::loaded_libraries::LoadedLibraryCheck;
using rooflab::loaded_libraries::loaded_objects;
using rooflab::loaded_libraries::LoadedObject;

TEST(LoadedLibraries, SharedObjectsOfEachForbiddenLibrary) {
  using rooflab::loaded_libraries::shared_object_prefixes;
  EXPECT_EQ(shared_object_prefixes("cuBLAS"), std::vector<std::string>{"libcublas"});
  EXPECT_EQ(shared_object_prefixes("cudnn"), std::vector<std::string>{"libcudnn"});
  EXPECT_TRUE(shared_object_prefixes("CUTLASS").empty());  // header-only: nothing to load
  EXPECT_TRUE(shared_object_prefixes("Thrust").empty());
}

TEST(LoadedLibraries, OnlyForbiddenLibrariesLoadedAtRunTimeAreReported) {
  const std::vector<LoadedObject> loaded = {{"", true, ""},
                                            {"/usr/lib/libstdc++.so.6", true, "libstdc++.so.6"},
                                            {"/opt/cuda/lib64/libcublas.so.13", true, ""},  // linked: the harness's
                                            {"/opt/cuda/lib64/libcublasLt.so.13", false, ""},
                                            {"/opt/cuda/lib64/libcudnn_ops.so.9", false, ""},
                                            {"/home/s/libmine.so", false, "libmine.so"}};
  const auto cublas = forbidden_loaded(loaded, {"cuBLAS", "CUTLASS"});
  ASSERT_EQ(cublas.size(), 1u);
  EXPECT_EQ(cublas[0], "libcublasLt.so.13 (cuBLAS, /opt/cuda/lib64/libcublasLt.so.13)");
  // Lab 02 allows cuBLAS and forbids cuDNN.
  const auto cudnn = forbidden_loaded(loaded, {"cuDNN"});
  ASSERT_EQ(cudnn.size(), 1u);
  EXPECT_NE(cudnn[0].find("libcudnn_ops.so.9 (cuDNN"), std::string::npos);
  EXPECT_TRUE(forbidden_loaded(loaded, {}).empty());
  // A copy under another name still carries its SONAME.
  const auto renamed = forbidden_loaded({{"/tmp/x/fast_math.so", false, "libcublas.so.13"}}, {"cuBLAS"});
  ASSERT_EQ(renamed.size(), 1u);
  EXPECT_EQ(renamed[0], "libcublas.so.13 (cuBLAS, a copy named /tmp/x/fast_math.so)");
}

TEST(LoadedLibraries, LinkedLibrariesAreNotTheStudentsDoing) {
  ASSERT_EQ(rooflab_fake_library(), 42);
  const auto loaded = loaded_objects();
  ASSERT_FALSE(loaded.empty());
  EXPECT_TRUE(loaded.front().linked);  // the executable
  const auto cudnn = std::ranges::find_if(loaded, [](const LoadedObject& o) { return o.path == ROOFLAB_FAKE_LINKED; });
  ASSERT_NE(cudnn, loaded.end()) << "the linked stand-in " << ROOFLAB_FAKE_LINKED << " is not loaded";
  EXPECT_TRUE(cudnn->linked);
  const auto libc = std::ranges::find_if(loaded, [](const LoadedObject& o) { return o.path.find("/libc.so") != std::string::npos; });
  ASSERT_NE(libc, loaded.end());
  EXPECT_TRUE(libc->linked);  // through libstdc++ or directly: the closure follows DT_NEEDED
  EXPECT_TRUE(forbidden_loaded(loaded, {"cuDNN"}).empty());
}

// The listener, as main() installs it: the test during which the library appeared fails, naming it; later
// tests do not fail for it again. (EXPECT_NONFATAL_FAILURE cannot see local variables: hence the static.)
TEST(LoadedLibraries, TheTestThatLoadedAForbiddenLibraryFails) {
  static LoadedLibraryCheck check({"cuDNN", "cuBLAS"});
  static const ::testing::TestInfo* self = ::testing::UnitTest::GetInstance()->current_test_info();
  check.OnTestEnd(*self);  // nothing forbidden loaded yet: no failure
  ASSERT_FALSE(::testing::Test::HasFailure());
  void* handle = dlopen(ROOFLAB_FAKE_OPENED, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_NONFATAL_FAILURE(check.OnTestEnd(*self), "libcublas.so (cuBLAS, " ROOFLAB_FAKE_OPENED ")");
  check.OnTestEnd(*self);  // reported once: the next test does not fail for it again
  static LoadedLibraryCheck lab02({"cuDNN", "CUTLASS", "Thrust"});  // cuBLAS allowed
  lab02.OnTestEnd(*self);
  dlclose(handle);
}

// dlmopen puts the library in a link-map namespace of its own, which this namespace's dl_iterate_phdr does
// not list: the mapped files still show it.
TEST(LoadedLibraries, ALibraryInAnotherLinkMapNamespaceIsSeen) {
  ASSERT_TRUE(forbidden_loaded(loaded_objects(), {"cuBLAS"}).empty());
  void* handle = dlmopen(LM_ID_NEWLM, ROOFLAB_FAKE_OPENED, RTLD_NOW);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto found = forbidden_loaded(loaded_objects(), {"cuBLAS"});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rfind("libcublas.so (cuBLAS, ", 0), 0u) << found[0];
  dlclose(handle);
}

// A library's file mapped by hand (openat and mmap, the raw way round the loader) shows in the mapped files.
TEST(LoadedLibraries, ALibraryFileMappedByHandIsSeen) {
  ASSERT_TRUE(forbidden_loaded(loaded_objects(), {"cuBLAS"}).empty());
  const int fd = open(ROOFLAB_FAKE_OPENED, O_RDONLY);
  ASSERT_GE(fd, 0);
  void* mapped = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  ASSERT_NE(mapped, MAP_FAILED);
  EXPECT_EQ(forbidden_loaded(loaded_objects(), {"cuBLAS"}).size(), 1u);
  munmap(mapped, 4096);
  EXPECT_TRUE(forbidden_loaded(loaded_objects(), {"cuBLAS"}).empty());
}

}  // namespace
