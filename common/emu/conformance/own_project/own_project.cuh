// What host_idioms.cu gives runner.cu (two .cu files of one program).
#pragma once

struct Affine {
  float mul;
  float add;
};

void scale(float* x, int n, int repeats);
void axpy_without_bias(float* y, const float* x, int n, float a, bool write_null);
void affine_pitched(float* m, size_t pitch, int width, int height);
void cccl_values(float* out, int n);
void trap_launch(int* out);
void sleep_ticks(long long* out);
void set_symbols(float scale_by, int offset, Affine affine);
Affine read_affine();
