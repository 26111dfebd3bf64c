// The typed ceilings of rooflab/testing/ceiling.hpp: names and units.
#include <rooflab/testing/ceiling.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>

namespace rooflab {

namespace {
struct Row {
  Ceiling ceiling;
  std::string_view name;
  std::string_view unit;
};
constexpr std::array<Row, 5> kRows = {{
    {Ceiling::copy_bandwidth, "copy_bandwidth", "B/s"},
    {Ceiling::fp32_fma_peak, "fp32_fma_peak", "FLOP/s"},
    {Ceiling::sgemm_peak, "sgemm_peak", "FLOP/s"},
    {Ceiling::fp16_tensor_peak, "fp16_tensor_peak", "FLOP/s"},
    {Ceiling::bf16_tensor_peak, "bf16_tensor_peak", "FLOP/s"},
}};
constexpr std::array<Ceiling, kRows.size()> kAll = [] {
  std::array<Ceiling, kRows.size()> out{};
  for (std::size_t i = 0; i < kRows.size(); ++i) out[i] = kRows[i].ceiling;
  return out;
}();

const Row& row(Ceiling c) {
  for (const auto& r : kRows) {
    if (r.ceiling == c) return r;
  }
  throw std::invalid_argument(fmt::format("no such ceiling ({})", static_cast<int>(c)));
}
}  // namespace

std::span<const Ceiling> all_ceilings() { return kAll; }
std::string_view to_string(Ceiling c) { return row(c).name; }
std::string_view si_unit(Ceiling c) { return row(c).unit; }

std::optional<Ceiling> parse_ceiling(std::string_view name) {
  for (const auto& r : kRows) {
    if (r.name == name) return r.ceiling;
  }
  return std::nullopt;
}

std::string units::readable(double value_si, std::string_view si_unit) {
  if (si_unit == "B/s") return fmt::format("{:.1f} GB/s", gb_per_s(value_si));
  if (si_unit == "FLOP/s") return fmt::format("{:.1f} TFLOP/s", tflop_per_s(value_si));
  return fmt::format("{:.4g} {}", value_si, si_unit);
}

void to_json(nlohmann::json& j, const CeilingInForce& c) {
  j = nlohmann::json{{"name", c.name}, {"value", c.value}, {"unit", c.unit}, {"measured", c.measured}};
}

void from_json(const nlohmann::json& j, CeilingInForce& c) {
  j.at("name").get_to(c.name);
  j.at("value").get_to(c.value);
  j.at("unit").get_to(c.unit);
  j.at("measured").get_to(c.measured);
}

void to_json(nlohmann::json& j, const Measure& m) {
  j = nlohmann::json{{"quantity", m.quantity}, {"value", m.value},         {"unit", m.unit},
                     {"against", m.against},   {"reference", m.reference}, {"fraction", m.fraction},
                     {"architecture", m.architecture}};
}

void from_json(const nlohmann::json& j, Measure& m) {
  j.at("quantity").get_to(m.quantity);
  j.at("value").get_to(m.value);
  j.at("unit").get_to(m.unit);
  j.at("against").get_to(m.against);
  j.at("reference").get_to(m.reference);
  j.at("fraction").get_to(m.fraction);
  j.at("architecture").get_to(m.architecture);
}

}  // namespace rooflab
