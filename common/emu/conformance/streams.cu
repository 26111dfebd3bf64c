// Streams and events as overlapping pipelines use them: a producer kernel on one non-blocking stream, a
// consumer on another that waits for the producer's event (cudaStreamWaitEvent), a kernel on a blocking stream
// read back by a synchronous copy (the legacy default stream waits for blocking streams), an asynchronous copy
// on a stream then cudaStreamSynchronize, and cudaDeviceSynchronize over all of them. Checked against host
// loops; exit 0 when all match.
//
// --unsynchronized runs the known-bad side: a kernel on a cudaStreamNonBlocking stream read back by a
// synchronous copy with nothing ordering the two. On a GPU the copy may run first; the CPU backend reports it
// and gives the copy poison, so this program's own check fails.
//
// --read-before-sync runs another: an asynchronous copy into pinned host memory (cudaMallocHost) read by the host
// before anything tells it the copy finished. On a GPU the call returns before the copy runs; the CPU backend
// holds the bytes back until the host synchronizes, the memory reading 0xCD until then, so this check fails too.
// (Into pageable memory the call returns after the copy, as CUDA documents: read at once, it is right.)
//
// The overlap pattern of CUDA's stream samples: one input and one output allocation cut into chunks, each chunk
// copied in, smoothed and copied out on a stream of its own. The streams share allocations but not bytes, so
// the backend must report nothing (run_suite.cmake fails a correct run with a report of a race between streams).
// --halo runs its known-bad side: each chunk's kernel also reads the first element of the next chunk, which that
// chunk's stream may still be copying in on a GPU; reported, naming both, and the sums come out wrong here.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

__global__ void produce(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.5f * static_cast<float>(i);
}

__global__ void consume(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] + 1.0f;
}

// out[i] = in[i] + in[i + 1], the last element of the range taking in[last] twice unless `past` lets it read on.
__global__ void smooth(const float* in, float* out, int n, int past) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + in[i + 1 < n + past ? i + 1 : i];
}

static int check(const char* what, const std::vector<float>& got, float (*want)(int)) {
  int bad = 0;
  for (int i = 0; i < static_cast<int>(got.size()); ++i) {
    if (got[i] != want(i) && ++bad <= 3) std::printf("%s[%d] = %g, want %g\n", what, i, got[i], want(i));
  }
  return bad;
}

int main(int argc, char** argv) {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
  float *x = nullptr, *y = nullptr, *z = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&z, n * sizeof(float));
  cudaStream_t producer = nullptr, consumer = nullptr, blocking = nullptr;
  cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking);
  cudaStreamCreate(&blocking);
  std::vector<float> host(n);
  int bad = 0;

  if (argc > 1 && std::strcmp(argv[1], "--unsynchronized") == 0) {
    produce<<<blocks, threads, 0, producer>>>(x, n);
    cudaMemcpy(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);  // nothing orders it after produce
    bad += check("x read unsynchronized", host, [](int i) { return 0.5f * static_cast<float>(i); });
    std::printf("streams (unsynchronized): %s\n", bad == 0 ? "all match" : "MISMATCH");
    cudaDeviceSynchronize();
    return bad == 0 ? 0 : 1;
  }

  // Chunks: 4 of 4096 floats (a whole number of pages, so each starts on a page of its own here).
  const bool halo = argc > 1 && std::strcmp(argv[1], "--halo") == 0;
  {
    constexpr int kChunks = 4, kChunk = 4096;
    float *in = nullptr, *out = nullptr, *staged = nullptr;
    cudaMalloc(&in, kChunks * kChunk * sizeof(float));
    cudaMalloc(&out, kChunks * kChunk * sizeof(float));
    cudaMallocHost(&staged, kChunks * kChunk * sizeof(float));
    for (int i = 0; i < kChunks * kChunk; ++i) staged[i] = static_cast<float>(i % 1000);
    cudaStream_t chunk_streams[kChunks] = {};
    for (cudaStream_t& stream : chunk_streams) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (int c = 0; c < kChunks; ++c) {
      const std::size_t at = static_cast<std::size_t>(c) * kChunk, bytes = kChunk * sizeof(float);
      cudaMemcpyAsync(in + at, staged + at, bytes, cudaMemcpyHostToDevice, chunk_streams[c]);
      smooth<<<kChunk / threads, threads, 0, chunk_streams[c]>>>(in + at, out + at, kChunk, halo && c + 1 < kChunks ? 1 : 0);
      cudaMemcpyAsync(staged + at, out + at, bytes, cudaMemcpyDeviceToHost, chunk_streams[c]);
    }
    cudaDeviceSynchronize();
    bad += check("chunks smoothed", std::vector<float>(staged, staged + kChunks * kChunk), [](int i) {
      const int next = i % 4096 == 4095 ? i : i + 1;  // each chunk's last element takes itself twice
      return static_cast<float>(i % 1000) + static_cast<float>(next % 1000);
    });
    for (cudaStream_t stream : chunk_streams) cudaStreamDestroy(stream);
    cudaFree(in);
    cudaFree(out);
    cudaFreeHost(staged);
  }
  if (halo) {
    std::printf("streams (halo): %s\n", bad == 0 ? "all match" : "MISMATCH");
    return bad == 0 ? 0 : 1;
  }

  float* pinned = nullptr;
  cudaMallocHost(&pinned, n * sizeof(float));
  if (argc > 1 && std::strcmp(argv[1], "--read-before-sync") == 0) {
    produce<<<blocks, threads, 0, producer>>>(x, n);
    cudaMemcpyAsync(pinned, x, n * sizeof(float), cudaMemcpyDeviceToHost, producer);
    bad += check("x read before its copy finished", std::vector<float>(pinned, pinned + n),
                 [](int i) { return 0.5f * static_cast<float>(i); });
    cudaStreamSynchronize(producer);
    std::printf("streams (read before sync): %s\n", bad == 0 ? "all match" : "MISMATCH");
    cudaFreeHost(pinned);
    return bad == 0 ? 0 : 1;
  }

  // A producer and a consumer on two non-blocking streams, ordered by an event.
  cudaEvent_t produced = nullptr;
  cudaEventCreateWithFlags(&produced, cudaEventDisableTiming);
  produce<<<blocks, threads, 0, producer>>>(x, n);
  cudaEventRecord(produced, producer);
  cudaStreamWaitEvent(consumer, produced, 0);
  consume<<<blocks, threads, 0, consumer>>>(x, y, n);
  cudaStreamSynchronize(consumer);
  cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  bad += check("y", host, [](int i) { return 0.25f * static_cast<float>(i) * static_cast<float>(i) + 1.0f; });

  // A blocking stream: the synchronous copy on the legacy default stream waits for it.
  consume<<<blocks, threads, 0, blocking>>>(x, z, n);
  cudaMemcpy(host.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost);
  bad += check("z", host, [](int i) { return 0.25f * static_cast<float>(i) * static_cast<float>(i) + 1.0f; });

  // An asynchronous copy back into pinned memory on the producer's stream, then that stream synchronized; another
  // known finished through an event recorded after it; one into pageable memory, right as soon as the call returns.
  produce<<<blocks, threads, 0, producer>>>(y, n);
  cudaMemcpyAsync(pinned, y, n * sizeof(float), cudaMemcpyDeviceToHost, producer);
  cudaStreamSynchronize(producer);
  bad += check("y produced", std::vector<float>(pinned, pinned + n), [](int i) { return 0.5f * static_cast<float>(i); });
  cudaEvent_t copied = nullptr;
  cudaEventCreate(&copied);
  cudaMemcpyAsync(pinned, x, n * sizeof(float), cudaMemcpyDeviceToHost, consumer);
  cudaEventRecord(copied, consumer);
  cudaEventSynchronize(copied);
  bad += check("x copied", std::vector<float>(pinned, pinned + n), [](int i) { return 0.5f * static_cast<float>(i); });
  cudaEventDestroy(copied);
  std::vector<float> pageable(n);
  cudaMemcpyAsync(pageable.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, producer);
  bad += check("y into pageable memory", pageable, [](int i) { return 0.5f * static_cast<float>(i); });
  cudaStreamSynchronize(producer);

  // Everything at once, then the device synchronized.
  produce<<<blocks, threads, 0, consumer>>>(z, n);
  cudaDeviceSynchronize();
  cudaMemcpy(host.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost);
  bad += check("z produced", host, [](int i) { return 0.5f * static_cast<float>(i); });

  if (cudaGetLastError() != cudaSuccess) ++bad;
  cudaEventDestroy(produced);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  cudaStreamDestroy(blocking);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  cudaFreeHost(pinned);
  std::printf("streams: %s\n", bad == 0 ? "all match" : "MISMATCH");
  return bad == 0 ? 0 : 1;
}
