// A shared library that stands in for a forbidden one in test_loaded_libraries.cpp: built twice, under the
// file names of cuBLAS (opened at run time) and cuDNN (linked), so the check is tested without the toolkit.
extern "C" int rooflab_fake_library() { return 42; }
