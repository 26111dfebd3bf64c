// The report channel: framing for the test process, parsing and verification for the grader.
#include <rooflab/detail/report_reader.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rooflab::report {

namespace {

std::mutex g_write_mutex;  // kernels run on worker threads; frames must not interleave

void write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the grader is gone or the channel is closed: nothing to report to
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void write_header(int fd, char type, std::uint64_t length) {
  unsigned char header[9];
  header[0] = static_cast<unsigned char>(type);
  for (int i = 0; i < 8; ++i) header[1 + i] = static_cast<unsigned char>(length >> (8 * i));
  write_all(fd, header, sizeof header);
}

template <typename T>
void record_impl(std::string_view label, std::span<const T> got, std::span<const T> want, double atol, double rtol,
                 const char* dtype) {
  const RecordMode mode = record_mode();
  const int fd = channel();
  if (mode == RecordMode::off || fd < 0) return;
  const std::span<const T> values = mode == RecordMode::got ? got : want;
  const nlohmann::json header = {{"label", std::string(label)}, {"dtype", dtype}, {"count", values.size()},
                                 {"atol", atol}, {"rtol", rtol}};
  const std::string h = header.dump();
  const auto hlen = static_cast<std::uint32_t>(h.size());
  const std::uint64_t length = 4 + h.size() + values.size_bytes();
  std::lock_guard lock(g_write_mutex);
  write_header(fd, kValues, length);
  unsigned char hl[4];
  for (int i = 0; i < 4; ++i) hl[i] = static_cast<unsigned char>(hlen >> (8 * i));
  write_all(fd, hl, 4);
  write_all(fd, h.data(), h.size());
  write_all(fd, values.data(), values.size_bytes());
}

}  // namespace

int channel() {
  static const int fd = [] {
    const char* s = std::getenv("ROOFLAB_REPORT_FD");
    if (s == nullptr || *s == '\0') return -1;
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    return (end != nullptr && *end == '\0' && v >= 0 && v < 1 << 20) ? static_cast<int>(v) : -1;
  }();
  return fd;
}

void write_frame(char type, std::string_view payload) {
  const int fd = channel();
  if (fd < 0) return;
  std::lock_guard lock(g_write_mutex);
  write_header(fd, type, payload.size());
  write_all(fd, payload.data(), payload.size());
}

RecordMode record_mode() {
  static const RecordMode mode = [] {
    const char* s = std::getenv("ROOFLAB_RECORD");
    if (s == nullptr) return RecordMode::off;
    if (std::strcmp(s, "got") == 0) return RecordMode::got;
    if (std::strcmp(s, "want") == 0) return RecordMode::want;
    return RecordMode::off;
  }();
  return mode;
}

void record(std::string_view label, std::span<const float> got, std::span<const float> want, double atol,
            double rtol) {
  record_impl(label, got, want, atol, rtol, "f32");
}

void record(std::string_view label, std::span<const double> got, std::span<const double> want, double atol,
            double rtol) {
  record_impl(label, got, want, atol, rtol, "f64");
}

void claim_kernel_seconds(double seconds) {
  write_frame(kClaim, nlohmann::json{{"kernel_seconds", seconds}}.dump());
}

// ---- reader ----

Report parse(std::string_view bytes) {
  Report r;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 9) {
      r.error = "truncated frame header";
      return r;
    }
    const char type = bytes[pos];
    std::uint64_t length = 0;
    for (int i = 0; i < 8; ++i) length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[pos + 1 + i])) << (8 * i);
    pos += 9;
    if (length > bytes.size() - pos) {
      r.error = "truncated frame";
      return r;
    }
    const std::string_view payload = bytes.substr(pos, length);
    pos += length;
    try {
      switch (type) {
        case kTestStart: r.started.push_back(nlohmann::json::parse(payload)); break;
        case kResult: r.results.push_back(nlohmann::json::parse(payload)); break;
        case kCoverage: r.coverage = nlohmann::json::parse(payload); break;
        case kClaim: r.claimed_kernel_seconds += nlohmann::json::parse(payload).at("kernel_seconds").get<double>(); break;
        case kValues: {
          if (payload.size() < 4) throw std::runtime_error("short values frame");
          std::uint32_t hlen = 0;
          for (int i = 0; i < 4; ++i) hlen |= static_cast<std::uint32_t>(static_cast<unsigned char>(payload[i])) << (8 * i);
          if (hlen > payload.size() - 4) throw std::runtime_error("values header past the frame");
          const auto h = nlohmann::json::parse(payload.substr(4, hlen));
          const std::string_view data = payload.substr(4 + hlen);
          Values v;
          v.label = h.at("label").get<std::string>();
          v.atol = h.at("atol").get<double>();
          v.rtol = h.at("rtol").get<double>();
          const auto count = h.at("count").get<std::size_t>();
          const std::string dtype = h.at("dtype").get<std::string>();
          const std::size_t elem = dtype == "f32" ? 4 : dtype == "f64" ? 8 : 0;
          if (elem == 0 || data.size() != count * elem) throw std::runtime_error("values of the wrong size or type");
          v.data.resize(count);
          for (std::size_t i = 0; i < count; ++i) {
            if (elem == 4) {
              float f;
              std::memcpy(&f, data.data() + 4 * i, 4);
              v.data[i] = f;
            } else {
              std::memcpy(&v.data[i], data.data() + 8 * i, 8);
            }
          }
          r.values.push_back(std::move(v));
          break;
        }
        default: throw std::runtime_error(fmt::format("unknown frame type {}", static_cast<int>(type)));
      }
    } catch (const std::exception& e) {
      r.error = fmt::format("malformed frame: {}", e.what());
      return r;
    }
  }
  return r;
}

Verdict verify(const std::vector<Values>& got, const std::vector<Values>& want) {
  Verdict v;
  if (got.size() != want.size()) {
    v.ok = false;
    v.message = fmt::format("the test process reported {} checked results where the reference run checks {}",
                            got.size(), want.size());
    return v;
  }
  for (std::size_t k = 0; k < got.size(); ++k) {
    const Values& g = got[k];
    const Values& w = want[k];
    if (g.label != w.label || g.data.size() != w.data.size()) {
      v.ok = false;
      v.message = fmt::format("check {} is \"{}\" with {} values in the test process but \"{}\" with {} in the "
                              "reference run", k + 1, g.label, g.data.size(), w.label, w.data.size());
      return v;
    }
    for (std::size_t i = 0; i < g.data.size(); ++i) {
      const double err = std::abs(g.data[i] - w.data[i]);
      // Written so that NaN on either side fails.
      if (!(err <= w.atol + w.rtol * std::abs(w.data[i]))) {
        v.ok = false;
        v.message = fmt::format("check {} (\"{}\"), element {}: the test process reported {:.9g}, the reference "
                                "run computes {:.9g}", k + 1, g.label, i, g.data[i], w.data[i]);
        return v;
      }
    }
    v.checked += g.data.size();
  }
  return v;
}

}  // namespace rooflab::report
