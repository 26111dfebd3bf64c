#include <rooflab/perf_model.hpp>

#include <rooflab/testing/ptx.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <unordered_map>

namespace rooflab::perf {

namespace {

// One PTX statement of a kernel body.
struct Statement {
  int line = 0;
  std::string label;   // "$L__BB0_2" for a label, else empty
  std::string opcode;  // "ld.global.nc.f32"
  std::vector<std::string> operands;
  bool guarded = false;  // "@%p1 ...": runs only where its predicate holds
};

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r{}");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r{}");
  return std::string(s.substr(b, e - b + 1));
}

// Operands split at top-level commas ("{%f1, %f2}, [%rd3]" is two).
std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (const char ch : s) {
    if (ch == '{' || ch == '[') ++depth;
    if (ch == '}' || ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::vector<Statement> statements(std::string_view body) {
  std::vector<Statement> out;
  std::istringstream in{std::string(body)};
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (const auto c = line.find("//"); c != std::string::npos) line.resize(c);
    std::stringstream parts(line);
    for (std::string part; std::getline(parts, part, ';');) {
      std::string s = trim(part);
      if (s.empty() || s[0] == '.') continue;  // .reg, .local, .shared declarations
      Statement st;
      st.line = line_no;
      if (s.back() == ':') {
        st.label = s.substr(0, s.size() - 1);
        out.push_back(std::move(st));
        continue;
      }
      std::size_t pos = 0;
      if (s[0] == '@') {  // a guard predicate is read like any operand
        const auto sp = s.find_first_of(" \t");
        if (sp == std::string::npos) continue;
        st.guarded = true;
        st.operands.push_back(s.substr(1, sp - 1));
        pos = s.find_first_not_of(" \t", sp);
        if (pos == std::string::npos) continue;
      }
      const auto sp = s.find_first_of(" \t", pos);
      st.opcode = s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
      if (sp != std::string::npos) {
        auto ops = split_operands(s.substr(sp));
        // Keep the guard last: operands[0] is the destination of instructions that write one.
        if (!st.operands.empty()) ops.push_back(st.operands.front());
        st.operands = std::move(ops);
      }
      out.push_back(std::move(st));
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The kernel parameter an ld.param operand names ("[_Z1kPfi_param_2+8]": parameter 2, byte 8 of it), if any.
struct ParamRef {
  int index = 0;
  long offset = 0;
};
std::optional<ParamRef> param_ref(const std::string& operand) {
  static const std::regex param(R"(_param_([0-9]+)(\+([0-9]+))?)");
  std::smatch m;
  if (!std::regex_search(operand, m, param)) return std::nullopt;
  return ParamRef{std::stoi(m[1].str()), m[3].matched ? std::stol(m[3].str()) : 0};
}

std::vector<std::string> registers_in(std::string_view operand) {
  static const std::regex reg(R"(%[a-z]+[0-9]+)");
  std::vector<std::string> out;
  const std::string s(operand);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), reg); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  return out;
}

// Instructions whose first operand is not a register they write.
bool writes_first_operand(std::string_view op) {
  return !(starts_with(op, "st.") || starts_with(op, "bra") || starts_with(op, "bar") || starts_with(op, "barrier") ||
           starts_with(op, "cp.async") || starts_with(op, "wmma.store") || starts_with(op, "red.") ||
           starts_with(op, "prefetch") || starts_with(op, "ret") || starts_with(op, "exit") ||
           starts_with(op, "stmatrix") || starts_with(op, "membar") || starts_with(op, "fence"));
}

bool is_mufu(std::string_view op) {
  for (const char* p : {"ex2.approx", "lg2.approx", "rcp.approx", "rsqrt.approx", "sqrt.approx", "sin.approx",
                        "cos.approx", "tanh.approx", "div.approx", "div.full"}) {
    if (starts_with(op, p)) return true;
  }
  return false;
}

double hmma_of(std::string_view op) {
  if (!(starts_with(op, "mma.sync") || starts_with(op, "wmma.mma"))) return 0;
  const bool wmma = starts_with(op, "wmma");
  // Shapes: m16n8k16 = 2048 MACs = one HMMA.16816; m16n8k8 half of it; WMMA's 16x16x16 (and 32x8x16, 8x32x16)
  // = 4096 MACs = two.
  if (op.find("m16n8k16") != std::string_view::npos) return 1;
  if (op.find("m16n8k8") != std::string_view::npos) return 0.5;
  if (op.find("m16n8k32") != std::string_view::npos) return 1;  // int8: the same tensor time as FP16's k16
  if (wmma) return 2;
  return 1;
}

// An ld or st of the shared state space.
bool ld_st_shared(std::string_view op) {
  return (starts_with(op, "ld.") || starts_with(op, "st.")) && op.find(".shared") != std::string_view::npos;
}

// An ld or st of the block's own shared memory (not another block's of the cluster).
bool shared_access(std::string_view op) {
  return ld_st_shared(op) && op.find("::cluster") == std::string_view::npos;
}

// The 8 x 8 matrices an ldmatrix or stmatrix moves (.x1, .x2, .x4); 0 for other instructions.
int matrices_of(std::string_view op) {
  if (!starts_with(op, "ldmatrix") && !starts_with(op, "stmatrix")) return 0;
  return op.find(".x4") != std::string_view::npos ? 4 : op.find(".x2") != std::string_view::npos ? 2 : 1;
}

// Shared-memory wavefronts of an instruction (128 bytes each; no bank conflicts assumed).
double wavefronts_of(std::string_view op) {
  if (const int n = matrices_of(op); n > 0) return n;
  if (starts_with(op, "wmma.load") && op.find(".shared") != std::string_view::npos) return 4;  // 512 B of f16
  if (starts_with(op, "wmma.store") && op.find(".shared") != std::string_view::npos) {
    return op.find(".f32") != std::string_view::npos ? 8 : 4;
  }
  if (ld_st_shared(op)) return std::max(1.0, ptx::access_bits(op) / 32.0);
  return 0;
}

bool is_global_load(std::string_view op) { return starts_with(op, "ld.global"); }
bool is_global_store(std::string_view op) { return starts_with(op, "st.global") || starts_with(op, "red.global"); }

// One instruction as the counts read it, whichever listing it comes from (PTX or SASS).
struct Instr {
  int line = 0;
  std::string label;                 // a label: no instruction
  std::vector<std::string> targets;  // a branch's targets
  std::string callee;                // a call's (SASS CALL.REL to a subroutine ptxas placed after the kernel)
  std::vector<std::string> writes;   // registers it writes
  std::vector<std::string> reads;    // registers it reads
  double load_bytes = 0;             // a global load's bytes (per thread)
  double store_bytes = 0;            // a global store's (or reduction's)
  double cp_async_bytes = 0;         // global -> shared, asynchronous
  bool global_load = false;
  bool global_store = false;
  bool ffma = false;
  bool hfma2 = false;
  bool mufu = false;
  bool conversion = false;  // on the conversion / special pipe (a quarter rate)
  bool barrier = false;
  int async_wait = -1;    // a wait for cp.async batches: how many of the newest it lets stay in flight
  double wavefronts = 0;  // shared-memory wavefronts of 128 B
  double hmma = 0;        // HMMA.16816 equivalents
  std::vector<int> address_params;  // a global load's: the kernel parameters its address is computed from
  // For that trace: the parameters the instruction reads itself (PTX's ld.param, SASS's constant bank 0), whether
  // what it writes is data loaded from memory (which carries no parameter), and the uniform registers (SASS).
  std::vector<int> param_reads;
  bool data_load = false;
  bool guarded = false;  // under a predicate: what it writes may keep its old value
  // The guard ("!P0", "%p1") and the predicate registers the instruction names otherwise (it may write them: a
  // comparison, a carry): an instruction under the same guard as the one that last wrote a register, with the
  // predicate unchanged since, runs only where that write happened and sees what it wrote.
  std::string guard;
  std::vector<std::string> predicates;
  bool falls_through = true;  // false after an unguarded jump, exit or return: the next instruction is not next
  std::vector<std::string> uniform_writes;
  std::vector<std::string> uniform_reads;
};

// The names ptxas gives the subroutines it places after a kernel's code ("$__internal_3_$__cuda_sm20_rem_u64").
constexpr std::string_view kSubroutinePrefix = "$__internal";

// What a subroutine ptxas placed after the kernel's code (a 64-bit division's, a slow path's) does to the registers,
// as the parameter trace needs it: the registers it writes, those it reads before writing them on some path (its
// arguments), and the kernel parameters it reads itself.
struct Subroutine {
  std::set<std::string> writes;
  std::set<std::string> reads;
  std::set<int> param_reads;
};

// Each subroutine of `code` by its entry label: its blocks run from its entry to the next subroutine's (or the end).
// A read is an argument unless every path from the entry writes the register first (unguarded); the paths are the
// blocks' fall-throughs and branch targets inside the subroutine.
std::map<std::string, Subroutine> subroutines_of(const std::vector<Instr>& code, const std::vector<std::size_t>& starts,
                                                 const std::map<std::string, std::size_t>& block_of_label) {
  std::vector<std::pair<std::string, std::size_t>> entries;
  for (const auto& in : code) {
    if (!starts_with(in.label, kSubroutinePrefix)) continue;
    if (const auto it = block_of_label.find(in.label); it != block_of_label.end()) entries.emplace_back(in.label, it->second);
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::map<std::string, Subroutine> out;
  const std::size_t blocks = starts.size() - 1;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::size_t first = entries[e].second, end = e + 1 < entries.size() ? entries[e + 1].second : blocks;
    Subroutine& sub = out[entries[e].first];
    // Registers every path writes before entering each block (nullopt: not reached yet).
    std::vector<std::optional<std::set<std::string>>> written(end - first);
    written[0] = std::set<std::string>{};
    for (bool again = true; again;) {
      again = false;
      for (std::size_t b = first; b < end; ++b) {
        if (!written[b - first]) continue;
        std::set<std::string> have = *written[b - first];
        for (std::size_t i = starts[b]; i < starts[b + 1]; ++i) {
          const Instr& in = code[i];
          for (const auto* regs : {&in.reads, &in.uniform_reads}) {
            for (const auto& r : *regs) {
              if (have.count(r) == 0) sub.reads.insert(r);
            }
          }
          sub.param_reads.insert(in.param_reads.begin(), in.param_reads.end());
          for (const auto* regs : {&in.writes, &in.uniform_writes}) {
            for (const auto& w : *regs) {
              sub.writes.insert(w);
              if (!in.guarded) have.insert(w);
            }
          }
        }
        std::vector<std::size_t> next;
        if (b + 1 < end) next.push_back(b + 1);
        for (const auto& t : code[starts[b + 1] - 1].targets) {
          const auto it = block_of_label.find(t);
          if (it != block_of_label.end() && it->second >= first && it->second < end) next.push_back(it->second);
        }
        for (const std::size_t n : next) {
          auto& into = written[n - first];
          if (!into) {
            into = have;
            again = true;
            continue;
          }
          std::set<std::string> both;
          std::set_intersection(into->begin(), into->end(), have.begin(), have.end(), std::inserter(both, both.end()));
          if (both != *into) {
            into = std::move(both);
            again = true;
          }
        }
      }
    }
  }
  return out;
}

// The predicate register a guard tests ("!P0" -> "P0").
std::string predicate_of(const std::string& guard) {
  return guard.empty() || guard[0] != '!' ? guard : guard.substr(1);
}
// Whether an operand names one of SASS's predicate registers P0 .. P6 (PT, the constant true, is none).
bool is_predicate_register(std::string_view name) {
  return name.size() == 2 && name[0] == 'P' && name[1] >= '0' && name[1] <= '6';
}

// Which kernel parameters each global load's address is computed from: a register holds the parameters its value
// was computed from, starting where a parameter is read (PTX's ld.param, SASS's constant bank 0) and carried
// through every instruction but a load (a value loaded from memory is data, so x[idx[i]] comes from x, not idx).
// Flow-sensitive, as ptxas reuses registers for unrelated values: a write replaces what the register held, and a
// block starts from the union of what its predecessors end with (every branch may fall through), repeated until
// no block's start grows.
void trace_parameters(std::vector<Instr>& code) {
  // Per register: the parameters its value may come from on any path, and where its last write was guarded, the
  // guard and the parameters of that write alone (what an instruction under the same guard sees).
  struct Origin {
    std::set<int> any;
    std::string guard;
    std::set<int> guarded;
    bool operator==(const Origin&) const = default;
  };
  using State = std::map<std::string, Origin>;
  // Basic blocks: [starts[b], starts[b + 1]); a block starts at a label and after a branch or a call.
  std::vector<std::size_t> starts{0};
  std::map<std::string, std::size_t> block_of_label;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (!code[i].label.empty() && i != starts.back()) starts.push_back(i);
    if (!code[i].label.empty()) block_of_label[code[i].label] = starts.size() - 1;
    if ((!code[i].targets.empty() || !code[i].callee.empty()) && i + 1 < code.size()) starts.push_back(i + 1);
  }
  const std::size_t blocks = starts.size();
  starts.push_back(code.size());
  const std::map<std::string, Subroutine> subroutines = subroutines_of(code, starts, block_of_label);
  const auto origin_of = [](const State& state, const Instr& in) {
    std::set<int> origin(in.param_reads.begin(), in.param_reads.end());
    for (const auto* regs : {&in.reads, &in.uniform_reads}) {
      for (const auto& r : *regs) {
        const auto it = state.find(r);
        if (it == state.end()) continue;
        const Origin& o = it->second;
        const auto& params = !in.guard.empty() && o.guard == in.guard ? o.guarded : o.any;
        origin.insert(params.begin(), params.end());
      }
    }
    return origin;
  };
  const auto merge = [](State& into, const State& from) {
    bool grew = false;
    for (const auto& [reg, o] : from) {
      const auto it = into.find(reg);
      if (it == into.end()) {
        into.emplace(reg, o);
        grew = true;
        continue;
      }
      Origin& have = it->second;
      const Origin before = have;
      have.any.insert(o.any.begin(), o.any.end());
      if (have.guard == o.guard) {
        have.guarded.insert(o.guarded.begin(), o.guarded.end());
      } else {
        have.guard.clear();
        have.guarded.clear();
      }
      grew = grew || !(have == before);
    }
    return grew;
  };
  std::vector<State> entry(blocks);
  std::vector<std::set<int>> address(code.size());
  std::vector<bool> queued(blocks, true);
  for (bool again = true; again;) {
    again = false;
    for (std::size_t b = 0; b < blocks; ++b) {
      if (!queued[b]) continue;
      queued[b] = false;
      State state = entry[b];
      for (std::size_t i = starts[b]; i < starts[b + 1]; ++i) {
        const Instr& in = code[i];
        if (in.global_load) {
          const auto origin = origin_of(state, in);
          address[i].insert(origin.begin(), origin.end());
        }
        // A predicate the instruction may write: a guard of it no longer says where the last write happened.
        for (const auto& p : in.predicates) {
          for (auto& [reg, o] : state) {
            if (!o.guard.empty() && predicate_of(o.guard) == p) {
              o.guard.clear();
              o.guarded.clear();
            }
          }
        }
        if (in.writes.empty() && in.uniform_writes.empty()) continue;
        const std::set<int> origin = in.data_load ? std::set<int>{} : origin_of(state, in);
        for (const auto* regs : {&in.writes, &in.uniform_writes}) {
          for (const auto& w : *regs) {
            Origin& o = state[w];
            if (in.guarded) {
              o.any.insert(origin.begin(), origin.end());
              o.guard = in.guard;
              o.guarded = origin;
            } else {
              o = Origin{origin, "", {}};
            }
          }
        }
      }
      // A call returns with what its subroutine writes computed from what it reads (a call whose subroutine is not
      // in the listing leaves every register as it was).
      const Instr& last = code[starts[b + 1] - 1];
      if (const auto sub = subroutines.find(last.callee); sub != subroutines.end()) {
        std::set<int> origin(sub->second.param_reads.begin(), sub->second.param_reads.end());
        for (const auto& r : sub->second.reads) {
          if (const auto it = state.find(r); it != state.end()) origin.insert(it->second.any.begin(), it->second.any.end());
        }
        for (const auto& w : sub->second.writes) state[w] = Origin{origin, "", {}};
      }
      // Successors: the next block, and the blocks of the last instruction's branch targets.
      std::vector<std::size_t> next;
      if (b + 1 < blocks) next.push_back(b + 1);
      for (const auto& t : last.targets) {
        if (const auto it = block_of_label.find(t); it != block_of_label.end()) next.push_back(it->second);
      }
      for (const std::size_t n : next) {
        if (merge(entry[n], state) && !queued[n]) {
          queued[n] = true;
          again = true;
        }
      }
    }
  }
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i].global_load) code[i].address_params.assign(address[i].begin(), address[i].end());
  }
}

// One PTX statement read as an instruction: what it reads, writes and does (the parameter trace aside).
Instr instr_of(const Statement& s) {
  Instr in;
  in.line = s.line;
  in.label = s.label;
  in.guarded = s.guarded;
  if (!s.label.empty() || s.opcode.empty()) return in;
  const std::string& op = s.opcode;
  if (starts_with(op, "bra")) in.targets = s.operands;
  in.falls_through = s.guarded || !(starts_with(op, "bra") || starts_with(op, "ret") || starts_with(op, "exit"));
  if (s.guarded && !s.operands.empty()) in.guard = s.operands.back();  // kept last
  for (std::size_t k = 0; k + (s.guarded ? 1 : 0) < s.operands.size(); ++k) {
    for (auto& r : registers_in(s.operands[k])) {
      if (starts_with(r, "%p")) in.predicates.push_back(std::move(r));
    }
  }
  const std::size_t first_source = writes_first_operand(op) ? 1 : 0;
  if (first_source == 1 && !s.operands.empty()) in.writes = registers_in(s.operands[0]);
  for (std::size_t k = first_source; k < s.operands.size(); ++k) {
    for (auto& r : registers_in(s.operands[k])) in.reads.push_back(std::move(r));
  }
  if (is_global_load(op)) {
    in.global_load = true;
    in.load_bytes = ptx::access_bits(op) / 8.0;
  } else if (is_global_store(op)) {
    in.global_store = true;
    in.store_bytes = ptx::access_bits(op) / 8.0;
  } else if (starts_with(op, "cp.async") && op.find(".global") != std::string::npos && s.operands.size() >= 3) {
    try {
      in.cp_async_bytes = std::stod(s.operands[2]);
    } catch (const std::exception&) {
      in.cp_async_bytes = 16;
    }
  }
  in.ffma = starts_with(op, "fma.rn.f32") || starts_with(op, "fma.rz.f32") || starts_with(op, "fma.rn.ftz.f32");
  in.hfma2 = starts_with(op, "fma.rn.f16x2") || starts_with(op, "fma.rn.bf16x2");
  in.mufu = is_mufu(op);
  // Integer widening (cvt.u64.u32) is an ordinary ALU op; conversions to or from floating point are not.
  in.conversion = starts_with(op, "cvt.") && (op.find(".f") != std::string::npos || op.find(".bf") != std::string::npos);
  in.wavefronts = wavefronts_of(op);
  // A cp.async writes what it copies into shared memory: its 32 lanes' bytes in 128-byte wavefronts, as a store would.
  if (in.cp_async_bytes > 0) in.wavefronts = std::max(1.0, in.cp_async_bytes / 4);
  in.hmma = hmma_of(op);
  in.barrier = starts_with(op, "bar.sync") || starts_with(op, "barrier.sync") || starts_with(op, "bar.cta");
  if (starts_with(op, "cp.async.wait_all")) {
    in.async_wait = 0;
  } else if (starts_with(op, "cp.async.wait_group") && !s.operands.empty()) {
    try {
      in.async_wait = std::stoi(s.operands[0]);
    } catch (const std::exception&) {
      in.async_wait = 0;
    }
  }
  const auto ref = starts_with(op, "ld.param") && s.operands.size() > 1 ? param_ref(s.operands[1]) : std::nullopt;
  if (ref) {
    in.param_reads.push_back(ref->index);
  } else {
    in.data_load = starts_with(op, "ld.") || starts_with(op, "atom") || starts_with(op, "wmma.load") ||
                   starts_with(op, "ldmatrix");
  }
  return in;
}

std::vector<Instr> from_ptx(const std::vector<Statement>& sts) {
  std::vector<Instr> out;
  out.reserve(sts.size());
  for (const auto& s : sts) out.push_back(instr_of(s));
  trace_parameters(out);
  return out;
}

// ---- SASS (nvdisasm's listing of the cubin ptxas made) ----

// The width in bytes a SASS memory opcode names (LDG.E.128: 16; LDS.U16: 2; none: 4).
double sass_access_bytes(std::string_view op) {
  double bytes = 4;
  std::size_t pos = 0;
  while (pos <= op.size()) {
    const auto dot = op.find('.', pos);
    const auto part = op.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (part == "U8" || part == "S8") bytes = 1;
    if (part == "U16" || part == "S16") bytes = 2;
    if (part == "64") bytes = 8;
    if (part == "128") bytes = 16;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return bytes;
}

// The general registers an operand names ("R42.64" is R42 and R43; "desc[UR8][R2.64+0x10]" is R2 and R3), each
// `count` wide from its first (a 128-bit load's destination: four). Uniform (UR) and special registers are not
// general registers; RZ is none.
std::vector<std::string> sass_registers(std::string_view operand, int count = 1) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < operand.size(); ++i) {
    if (operand[i] != 'R' || (i > 0 && (std::isalnum(static_cast<unsigned char>(operand[i - 1])) || operand[i - 1] == '_'))) continue;
    std::size_t j = i + 1;
    while (j < operand.size() && std::isdigit(static_cast<unsigned char>(operand[j]))) ++j;
    if (j == i + 1) continue;
    const int first = std::stoi(std::string(operand.substr(i + 1, j - i - 1)));
    int width = count;
    if (operand.substr(j, 3) == ".64") width = std::max(width, 2);
    if (operand.substr(j, 4) == ".128") width = std::max(width, 4);
    for (int r = 0; r < width; ++r) out.push_back(fmt::format("R{}", first + r));
    i = j;
  }
  return out;
}

// Whether SASS opcode `op` is `name`, with or without modifiers ("LDG.E.128" is LDG; "LDGSTS" is not).
bool sass_is(std::string_view op, std::string_view name) {
  return op.substr(0, name.size()) == name && (op.size() == name.size() || op[name.size()] == '.');
}

bool sass_writes_first_operand(std::string_view op) {
  for (const char* p : {"ST", "STG", "STS", "STL", "RED", "BAR", "BRA", "BSSY", "BSYNC", "EXIT", "RET", "LDGSTS",
                        "LDGDEPBAR", "DEPBAR", "MEMBAR", "FENCE", "CCTL", "ERRBAR", "WARPSYNC", "NOP", "CALL", "YIELD",
                        "STSM", "SYNCS", "ARRIVES", "BPT"}) {
    if (sass_is(op, p)) return false;
  }
  return true;
}

// The uniform registers an operand names ("UR4"; "UR6.64" or a 64-bit instruction's destination: UR6 and UR7).
std::vector<std::string> sass_uniform_registers(std::string_view operand, int count = 1) {
  static const std::regex reg(R"(\bUR([0-9]+)(\.64)?)");
  std::vector<std::string> out;
  const std::string s(operand);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), reg); it != std::sregex_iterator(); ++it) {
    const int first = std::stoi((*it)[1].str());
    const int width = (*it)[2].matched ? std::max(count, 2) : count;
    for (int r = 0; r < width; ++r) out.push_back(fmt::format("UR{}", first + r));
  }
  return out;
}

// The kernel parameters an operand reads from constant bank 0 ("c[0x0][0x218]"), by the layout.
std::vector<int> sass_param_reads(std::string_view operand, const SassParams& params) {
  static const std::regex bank0(R"(c\[0x0\]\[(0x[0-9a-fA-F]+)\])");
  std::vector<int> out;
  const std::string s(operand);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), bank0); it != std::sregex_iterator(); ++it) {
    const int at = static_cast<int>(std::stoul((*it)[1].str(), nullptr, 16)) - params.base;
    for (std::size_t k = 0; k < params.layout.size(); ++k) {
      const auto [offset, size] = params.layout[k];
      if (at >= offset && at < offset + size) out.push_back(static_cast<int>(k));
    }
  }
  return out;
}

std::vector<Instr> from_sass(std::string_view body, const SassParams* params) {
  std::vector<Instr> out;
  std::size_t kernel_end = std::string::npos;  // where the subroutines after the kernel's code begin
  // Complementary pairs: "@!P0 LDGSTS ..." then "@P0 LDGSTS ...", P0 unchanged between them, is how ptxas writes a
  // cp.async whose source size is chosen at run time (zeros outside the matrix, or a copy), and a load or store
  // from one of two places likewise. Each lane runs one of the two: the pair moves one access's bytes and
  // shared-memory wavefronts, and the second counts none. Per opcode, the guard of the last guarded memory
  // instruction of the block; a label, a branch or an instruction that names the predicate ends the pairing.
  std::map<std::string, std::string> paired;
  const auto complement = [](const std::string& guard) { return guard[0] == '!' ? guard.substr(1) : "!" + guard; };
  std::istringstream in{std::string(body)};
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    // "        /*0570*/               @P2 LDG.E.U16.CONSTANT R22, desc[UR8][R42.64] ;" and ".L_x_231:"
    if (const auto c = line.find("*/"); c != std::string::npos && line.find("/*") < c) line.erase(0, c + 2);
    if (const auto c = line.find("/*"); c != std::string::npos) line.resize(c);  // trailing comments
    if (const auto c = line.find(';'); c != std::string::npos) line.resize(c);
    std::string s = trim(line);
    if (s.empty()) continue;
    Instr ins;
    ins.line = line_no;
    if (s.back() == ':') {
      paired.clear();
      // A loop label (".L_x_231"); not the function's own name or its section's (".text.<name>"). Past the kernel's
      // code, a subroutine's entry ("$__internal_3_$__cuda_sm20_rem_u64"), which its calls name.
      const bool entry = kernel_end != std::string::npos && starts_with(s, kSubroutinePrefix);
      if (!entry && (s[0] != '.' || s.rfind(".text.", 0) == 0 || s.find('_') == std::string::npos)) continue;
      ins.label = s.substr(0, s.size() - 1);
      out.push_back(std::move(ins));
      continue;
    }
    // The kernel's code ends where a subroutine ptxas placed after it begins (".weak $__internal_0_$__cuda_sm3x_div_rn_
    // noftz_f32_slowpath": a division's or reciprocal's slow path, called for rare operands): its instructions are
    // not the kernel's per-thread work. They are read all the same, for the parameter trace alone (a call's result
    // is computed from what the subroutine reads, not what its registers held before), and dropped after it.
    if ((s.rfind(".weak", 0) == 0 || s.rfind(".type", 0) == 0) && s.find(kSubroutinePrefix) != std::string::npos) {
      kernel_end = std::min(kernel_end, out.size());
      continue;
    }
    if (kernel_end != std::string::npos && s[0] == '.') continue;  // a subroutine's directives (".size")
    if (s[0] == '.') continue;  // directives
    std::size_t pos = 0;
    if (s[0] == '@') {
      const auto sp = s.find_first_of(" \t");
      if (sp == std::string::npos) continue;
      ins.guarded = s.substr(0, sp) != "@PT";
      if (ins.guarded) ins.guard = s.substr(1, sp - 1);
      pos = s.find_first_not_of(" \t", sp);
      if (pos == std::string::npos) continue;
      // "@!PT LDS RZ, [RZ]": never runs (PT is the constant true). ptxas places such instructions as padding; they
      // take an issue slot and nothing else.
      if (ins.guard == "!PT") {
        ins.guarded = false;
        ins.guard.clear();
        out.push_back(std::move(ins));
        continue;
      }
    }
    const auto sp = s.find_first_of(" \t", pos);
    const std::string op = s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
    if (op == "NOP") continue;
    std::vector<std::string> operands;
    if (sp != std::string::npos) operands = split_operands(s.substr(sp));
    auto is = [&](const char* name) { return sass_is(op, name); };
    // A branch's or a call's target, as nvdisasm writes it: "`(.L_x_87)".
    for (const auto& o : operands) {
      const auto b = o.find("(");
      const auto e = o.find(")");
      if (b == std::string::npos || e == std::string::npos || e <= b) continue;
      if (is("BRA")) ins.targets.push_back(o.substr(b + 1, e - b - 1));
      if (is("CALL")) ins.callee = o.substr(b + 1, e - b - 1);
    }
    // BRA.DIV goes to nvcc's out-of-line code for a divergent warp, and falls through where the warp converged.
    ins.falls_through = ins.guarded || !((is("BRA") && op.find(".DIV") == std::string::npos) || is("EXIT") ||
                                         is("RET") || is("KILL"));
    const double bytes = sass_access_bytes(op);
    const int regs = std::max(1, static_cast<int>(bytes / 4));
    const bool load = is("LDG") || is("LD");
    const bool store = is("STG") || is("ST") || is("RED") || is("ATOMG");
    const bool writes = sass_writes_first_operand(op);
    // How many registers the first operand of a wide instruction covers.
    int dst_width = 1;
    if (load || is("LDS")) dst_width = regs;
    if (is("LDSM")) dst_width = op.find(".4") != std::string::npos ? 4 : (op.find(".2") != std::string::npos ? 2 : 1);
    const bool mma = is("HMMA") || is("IMMA");
    const bool k8 = op.find(".1688") != std::string::npos || op.find(".8816") != std::string::npos;
    if (mma) dst_width = op.find(".F16") != std::string::npos && op.find(".F32") == std::string::npos ? 2 : 4;
    for (const auto& o : operands) {  // P0 .. P6, or negated (PT is the constant true)
      const std::string_view name = !o.empty() && o[0] == '!' ? std::string_view(o).substr(1) : std::string_view(o);
      if (is_predicate_register(name)) ins.predicates.emplace_back(name);
    }
    // 64-bit values in register pairs: IMAD.WIDE's result; F2I's to a 64-bit integer, I2F's from one (the type an
    // F2I names is its result's, an I2F's its source's, unless F64); double precision's operands.
    const auto has = [&](const char* type) { return op.find(type) != std::string::npos; };
    const bool int64 = has(".U64") || has(".S64");
    const bool pair_dst = (is("IMAD") && has(".WIDE")) || (is("F2I") && int64) || (is("I2F") && has(".F64")) ||
                          is("DADD") || is("DMUL") || is("DFMA");
    const bool pair_src = (is("I2F") && int64) || (is("F2I") && has(".F64")) || is("DADD") || is("DMUL") ||
                          is("DFMA") || is("DSETP");
    if (pair_dst) dst_width = 2;
    for (std::size_t k = 0; k < operands.size(); ++k) {
      int width = 1;
      if (k == 0 && writes) width = dst_width;
      if (pair_src && !(k == 0 && writes)) width = 2;
      if (mma) width = k == 0 ? dst_width : (k == 1 ? (k8 ? 2 : 4) : (k == 2 ? (k8 ? 1 : 2) : dst_width));
      // A store's data: its width (STG.E.128 [R2.64], R4 reads R4..R7).
      if (!writes && k + 1 == operands.size() && (store || is("STS") || is("STL"))) width = regs;
      // A 64-bit constant-bank load's destination is a register pair (LDC.64 R2, ULDC.64 UR4).
      if (k == 0 && writes && (is("LDC") || is("ULDC")) && op.find(".64") != std::string::npos) width = 2;
      auto r = sass_registers(operands[k], width);
      auto& to = (k == 0 && writes) ? ins.writes : ins.reads;
      to.insert(to.end(), r.begin(), r.end());
      if (params != nullptr) {
        auto u = sass_uniform_registers(operands[k], width);
        auto& uto = (k == 0 && writes) ? ins.uniform_writes : ins.uniform_reads;
        uto.insert(uto.end(), u.begin(), u.end());
        for (const int p : sass_param_reads(operands[k], *params)) ins.param_reads.push_back(p);
      }
    }
    ins.data_load = load || is("LDS") || is("LDSM") || is("LDL") || is("ATOMG") || is("ATOM") || is("ATOMS");
    if (load) {
      ins.global_load = true;
      ins.load_bytes = bytes;
    } else if (store) {
      ins.global_store = true;
      ins.store_bytes = bytes;
    } else if (is("LDGSTS")) {
      ins.cp_async_bytes = bytes;
    }
    ins.ffma = is("FFMA");
    // HFMA2.MMA with RZ operands is how ptxas materializes a constant (a move), not math.
    ins.hfma2 = is("HFMA2") && !(operands.size() >= 3 && operands[1].find("RZ") != std::string::npos &&
                                  operands[2].find("RZ") != std::string::npos);
    ins.mufu = is("MUFU");
    // Type conversions: 16 per SM per clock on sm_80 and sm_90 ("all other type conversions" in the CUDA C++
    // Programming Guide's table of arithmetic instruction throughput), whatever instruction ptxas made of them:
    // half to float is HADD2.F32 from -RZ. Integer widening (I2I, PRMT) is faster and not counted.
    ins.conversion = is("F2F") || is("F2I") || is("I2F") || is("F2FP") || is("I2FP") ||
                     (is("HADD2") && op.find(".F32") != std::string::npos && operands.size() >= 2 && operands[1] == "-RZ");
    if (is("LDS") || is("STS")) ins.wavefronts = std::max(1.0, bytes / 4);
    if (is("LDSM") || is("STSM")) ins.wavefronts = dst_width;
    if (is("LDGSTS")) ins.wavefronts = std::max(1.0, bytes / 4);  // its write into shared memory, as the PTX's cp.async
    if (mma) ins.hmma = k8 ? 0.5 : 1;
    ins.barrier = is("BAR") && (op.find(".SYNC") != std::string::npos || op.find(".RED") != std::string::npos);
    // DEPBAR.LE SB0, N: wait until at most N of the cp.async batches (LDGDEPBAR) on scoreboard 0 are pending.
    if (is("DEPBAR") && operands.size() >= 2 && operands[0] == "SB0") {
      try {
        ins.async_wait = std::stoi(operands[1], nullptr, 0);
      } catch (const std::exception&) {
        ins.async_wait = 0;
      }
    }
    // The complementary pairs (above): an instruction that names a predicate ends the pairs it guards.
    if (is("BRA") || is("CALL") || is("EXIT") || is("RET")) paired.clear();
    for (const auto& p : ins.predicates) {
      std::erase_if(paired, [&](const auto& kv) { return predicate_of(kv.second) == p; });
    }
    const bool memory = ins.global_load || ins.global_store || ins.cp_async_bytes > 0 || ins.wavefronts > 0;
    const std::string guarded_by = ins.guarded ? predicate_of(ins.guard) : "";
    if (memory && is_predicate_register(guarded_by)) {
      const auto open = paired.find(op);
      if (open != paired.end() && open->second == complement(ins.guard)) {
        ins.load_bytes = ins.store_bytes = ins.cp_async_bytes = ins.wavefronts = 0;
        paired.erase(open);
      } else {
        paired[op] = ins.guard;
      }
    }
    out.push_back(std::move(ins));
  }
  if (params != nullptr) trace_parameters(out);
  if (kernel_end != std::string::npos) out.resize(kernel_end);
  return out;
}

// Whether an instruction after position k of `path` reads a register the instruction at k writes, before another
// instruction writes it.
bool read_later(const std::vector<Instr>& code, const std::vector<std::size_t>& path, std::size_t k) {
  std::set<std::string> live(code[path[k]].writes.begin(), code[path[k]].writes.end());
  for (std::size_t j = k + 1; j < path.size() && !live.empty(); ++j) {
    for (const auto& r : code[path[j]].reads) {
      if (live.count(r) != 0) return true;
    }
    for (const auto& w : code[path[j]].writes) live.erase(w);
  }
  return false;
}

// The path one trip takes through [begin, end): the instructions, in order, along the forward branches and
// fall-throughs from `begin` to the loop's closing branch at end - 1 (to any instruction with nothing after it in
// the range, for a kernel body without a loop). Where a trip may go two ways (a fast path of 128-bit loads and a
// slow one of guarded 2-byte loads for a row's tail; a guard around the work), it takes the way that does the most
// work (global bytes moved, FP32 and half2 FMAs at four bytes each, tensor instructions), and of ways that do the
// same work, the one with the fewest instructions: at the timed sizes every guard passes and the wide path runs.
// Both ways counted as one trip would add the slow path's instructions to the issue slots, and the slow path's
// first use of a load would end the fast path's loads in flight. Backward branches inside the range (a nested
// loop) are not followed: a nested loop's body is counted once, as before. No path: the whole range, in order.
// `labels`: each label's index in `code`.
std::vector<std::size_t> trip_path(const std::vector<Instr>& code, const std::map<std::string, std::size_t>& labels,
                                   std::size_t begin, std::size_t end, bool loop) {
  std::vector<std::size_t> all(end - begin);
  for (std::size_t i = begin; i < end; ++i) all[i - begin] = i;
  if (end <= begin) return all;
  const auto successors = [&](std::size_t i) {
    std::vector<std::size_t> out;
    if (code[i].falls_through && i + 1 < end) out.push_back(i + 1);
    for (const auto& t : code[i].targets) {
      const auto it = labels.find(t);
      if (it != labels.end() && it->second > i && it->second < end &&
          std::find(out.begin(), out.end(), it->second) == out.end()) {
        out.push_back(it->second);
      }
    }
    return out;
  };
  // Best (work, -instructions) from each instruction to the path's end, lexicographically; nullopt: no way there.
  using Score = std::pair<double, double>;
  std::vector<std::optional<Score>> best(end - begin);
  std::vector<std::size_t> next(end - begin, end);
  for (std::size_t i = end; i-- > begin;) {
    const Instr& s = code[i];
    const Score own{s.load_bytes + s.store_bytes + s.cp_async_bytes + 4.0 * ((s.ffma ? 1 : 0) + (s.hfma2 ? 1 : 0)) +
                        4096.0 * s.hmma,
                    s.label.empty() ? -1.0 : 0.0};
    const auto succ = successors(i);
    const bool last = loop ? i == end - 1 : succ.empty();
    if (last) {
      best[i - begin] = own;
      continue;
    }
    for (const std::size_t j : succ) {
      if (!best[j - begin]) continue;
      const Score via{own.first + best[j - begin]->first, own.second + best[j - begin]->second};
      const bool better = !best[i - begin] || via.first > best[i - begin]->first + 1e-9 ||
                          (std::abs(via.first - best[i - begin]->first) <= 1e-9 && via.second > best[i - begin]->second);
      if (better) {
        best[i - begin] = via;
        next[i - begin] = j;
      }
    }
  }
  if (!best[0]) return all;
  std::vector<std::size_t> path;
  for (std::size_t i = begin; i < end; i = next[i - begin]) path.push_back(i);
  return path;
}

Trip count(const std::vector<Instr>& code, const std::map<std::string, std::size_t>& labels, std::size_t begin,
           std::size_t end, bool loop) {
  Trip t;
  t.first_line = code[begin].line;
  t.last_line = code[end - 1].line;
  std::set<std::string> pending;
  bool used = false;
  const std::vector<std::size_t> path = trip_path(code, labels, begin, end, loop);
  for (std::size_t k = 0; k < path.size(); ++k) {
    const auto& s = code[path[k]];
    if (!s.label.empty()) continue;
    ++t.instructions;
    // Whether this instruction reads a register a pending load writes (the first use ends what is in flight).
    if (!used && !pending.empty()) {
      for (const auto& r : s.reads) {
        if (pending.count(r) != 0) used = true;
      }
    }
    if (s.global_load) {
      ++t.global_loads;
      t.load_bytes += s.load_bytes;
      t.loads.push_back({s.address_params, s.load_bytes, !used, !read_later(code, path, k)});
      if (!used) {
        t.load_bytes_before_use += s.load_bytes;
        pending.insert(s.writes.begin(), s.writes.end());
      }
    } else if (s.global_store) {
      ++t.global_stores;
      t.store_bytes += s.store_bytes;
    }
    t.cp_async_bytes += s.cp_async_bytes;
    t.ffma += s.ffma;
    t.hfma2 += s.hfma2;
    t.mufu += s.mufu;
    t.conversions += s.conversion;
    t.shared_wavefronts += s.wavefronts;
    t.hmma += s.hmma;
    t.barriers += s.barrier;
    if (s.async_wait >= 0 && t.async_wait < 0) {
      t.async_wait = s.async_wait;
      t.async_wait_before_copies = t.cp_async_bytes == 0;
    }
  }
  return t;
}

double moved(const Trip& t) { return t.load_bytes + t.store_bytes + t.cp_async_bytes; }

// Whether the code from `from` reaches `to` (from <= to) along fall-throughs and forward branches.
bool reaches_forward(const std::vector<Instr>& sts, const std::map<std::string, std::size_t>& labels, std::size_t from,
                     std::size_t to) {
  if (from > to || to >= sts.size()) return false;
  std::vector<bool> reached(to - from + 1, false);
  reached[0] = true;
  for (std::size_t i = from; i < to; ++i) {
    if (!reached[i - from]) continue;
    if (sts[i].falls_through) reached[i + 1 - from] = true;
    for (const auto& t : sts[i].targets) {
      const auto it = labels.find(t);
      if (it != labels.end() && it->second > i && it->second <= to) reached[it->second - from] = true;
    }
  }
  return reached[to - from];
}

// Whether the backward branch at e - 1 to b closes a loop: whether the code from b reaches it along the forward
// branches and fall-throughs inside [b, e). nvcc moves a warp shuffle's fallback for a divergent warp out of line,
// after the kernel's EXIT; BRA.DIV jumps there and the fallback jumps back to the instruction after the BRA.DIV.
// That jump back is a backward branch, but the code it lands in reaches the fallback only through the BRA.DIV,
// before it: read as a loop, it would hold the real loop, the code after it and the fallback.
bool closes_a_loop(const std::vector<Instr>& sts, const std::map<std::string, std::size_t>& labels, std::size_t b,
                   std::size_t e) {
  return reaches_forward(sts, labels, b, e - 1);
}

// For each loop of `spans` (each loop's [head, closing branch + 1)), the innermost other loop around it: its index,
// or spans.size() for none. One nesting for every rule that asks which loop holds which (the hot loop's own work,
// its passes, the loops nested in it that count_trips runs).
std::vector<std::size_t> parents_of(const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  std::vector<std::size_t> out(spans.size(), spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    for (std::size_t j = 0; j < spans.size(); ++j) {
      const bool around = j != i && spans[j] != spans[i] && spans[j].first <= spans[i].first &&
                          spans[i].second <= spans[j].second;
      const std::size_t best = out[i];
      if (around && (best == spans.size() || spans[j].second - spans[j].first < spans[best].second - spans[best].first)) {
        out[i] = j;
      }
    }
  }
  return out;
}

// The hot loop's passes (Code::passes): of `spans` (each loop's [head, closing branch + 1), in code.loops' order),
// the loops with the same innermost enclosing loop as the hot one (or none, as it), not a remainder loop, the later
// of the two reached from the end of the earlier, that load from global memory. Which of them read an array the hot
// loop reads is for the prediction to tell, which knows the pointers (with_passes).
std::vector<int> passes_beside(const std::vector<Instr>& sts, const std::map<std::string, std::size_t>& labels,
                               const std::vector<std::pair<std::size_t, std::size_t>>& spans, const Code& code) {
  std::vector<int> out;
  const auto hot = static_cast<std::size_t>(code.hot);
  if (spans.size() != code.loops.size() || hot >= spans.size()) return out;
  const std::vector<std::size_t> parent = parents_of(spans);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Trip& t = code.loops[i];
    if (i == hot || t.remainder || parent[i] != parent[hot]) continue;
    const auto [b, e] = spans[i];
    const auto [hb, he] = spans[hot];
    if (b < he && hb < e) continue;  // the same range, or overlapping
    if (!(e <= hb ? reaches_forward(sts, labels, e, hb) : reaches_forward(sts, labels, he, b))) continue;
    if (t.global_loads > 0) out.push_back(static_cast<int>(i));
  }
  return out;
}

}  // namespace

namespace {

Code loops_of(const std::vector<Instr>& sts) {
  std::map<std::string, std::size_t> labels;
  for (std::size_t i = 0; i < sts.size(); ++i) {
    if (!sts[i].label.empty()) labels[sts[i].label] = i;
  }
  // Every backward branch closes a loop: [label, branch]. Not a branch to itself with nothing between: the trap
  // ptxas puts after a function's last instruction (".L_x_500: BRA `(.L_x_500)"), which never runs.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t i = 0; i < sts.size(); ++i) {
    for (const auto& o : sts[i].targets) {
      const auto it = labels.find(o);
      if (it == labels.end() || it->second >= i) continue;
      bool empty = true;
      for (std::size_t j = it->second + 1; j < i && empty; ++j) empty = !sts[j].label.empty();
      if (!empty || sts[i].guarded) ranges.emplace_back(it->second, i + 1);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  Code code;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // each loop's [head, closing branch + 1)
  for (const auto& [b, e] : ranges) {
    if (!closes_a_loop(sts, labels, b, e)) continue;
    Trip t = count(sts, labels, b, e, true);
    t.loop = true;
    code.loops.push_back(t);
    spans.emplace_back(b, e);
  }
  code.spans = spans;
  if (code.loops.empty() && !sts.empty()) {
    code.loops.push_back(count(sts, labels, 0, sts.size(), false));
  }
  if (code.loops.empty()) code.loops.emplace_back();
  // A remainder loop: the next loop after an unrolled one, doing the same kind of work k times less per trip.
  for (std::size_t i = 1; i < code.loops.size(); ++i) {
    const Trip& a = code.loops[i - 1];
    Trip& b = code.loops[i];
    if (!a.loop || !b.loop || b.first_line <= a.last_line || b.global_loads == 0 || a.global_loads <= b.global_loads) continue;
    const double k = a.load_bytes / b.load_bytes;
    const bool same_stores = (a.store_bytes == 0 && b.store_bytes == 0) ||
                             (b.store_bytes > 0 && std::abs(a.store_bytes / b.store_bytes - k) < 1e-9);
    if (k >= 2 && std::abs(k - std::round(k)) < 1e-9 && same_stores) {
      b.remainder = true;
      b.remainder_of = static_cast<int>(i - 1);
    }
  }
  // The hot loop: the innermost loop with tensor instructions; else the loop whose own work (what it does outside
  // the loops nested in it: global bytes, and FP32 FMAs at four bytes each) is largest, never a remainder loop over
  // the unrolled loop it finishes. Its counts include its nested loops once (their trip counts are not known
  // here): a GEMM's k-loop with its tile loads, say.
  const std::size_t count_loops = code.loops.size();
  std::vector<double> own(count_loops);
  for (std::size_t i = 0; i < count_loops; ++i) own[i] = moved(code.loops[i]) + 4.0 * (code.loops[i].ffma + code.loops[i].hfma2);
  // Less the loops nested one level down (deeper ones are in those).
  const std::vector<std::size_t> parent = parents_of(spans);
  for (std::size_t j = 0; j < spans.size(); ++j) {
    if (parent[j] < count_loops) own[parent[j]] -= moved(code.loops[j]) + 4.0 * (code.loops[j].ffma + code.loops[j].hfma2);
  }
  auto better = [&](std::size_t i, std::size_t j) {  // is loop i a better pick than loop j
    const Trip& a = code.loops[i];
    const Trip& b = code.loops[j];
    if ((a.hmma > 0) != (b.hmma > 0)) return a.hmma > 0;
    if (a.hmma > 0) return a.last_line - a.first_line < b.last_line - b.first_line;
    if (a.remainder != b.remainder) return !a.remainder;
    // Of loops that do the same work, the one with fewer instructions per trip: the compiler's copies of one loop
    // for a condition that holds for the whole loop (unswitched on k % 8 == 0, say: one copy of 128-bit loads, one
    // of guarded 2-byte loads), of which the wide one runs at the timed sizes, as within a trip (trip_path).
    if (std::abs(own[i] - own[j]) > 1e-9) return own[i] > own[j];
    return a.instructions < b.instructions;
  };
  for (std::size_t i = 0; i < count_loops; ++i) {
    if (code.hot < 0 || better(i, static_cast<std::size_t>(code.hot))) code.hot = static_cast<int>(i);
  }
  if (code.hot < 0) code.hot = 0;
  for (std::size_t i = 0; i < count_loops; ++i) {
    if (code.loops[i].remainder || moved(code.loops[i]) == 0) continue;
    if (code.mover < 0 || own[i] > own[static_cast<std::size_t>(code.mover)]) code.mover = static_cast<int>(i);
  }
  const Trip& h = code.loops[static_cast<std::size_t>(code.hot)];
  code.passes = passes_beside(sts, labels, spans, code);
  if (!h.loop) {
    code.why_hot = "no loop: the whole body, once per thread";
  } else if (h.hmma > 0) {
    code.why_hot = "the innermost loop with tensor instructions";
  } else {
    code.why_hot = "the loop that does the most work of its own per trip (global bytes, FP32 FMAs)";
  }
  return code;
}

}  // namespace

std::map<std::vector<int>, double> Trip::bytes_by_params(bool before_use_only) const {
  std::map<std::vector<int>, double> out;
  for (const auto& l : loads) {
    if (l.before_use || !before_use_only) out[l.params] += l.bytes;
  }
  return out;
}

Code analyze(std::string_view ptx_body) { return loops_of(from_ptx(statements(ptx_body))); }

int param_bank_base(std::string_view arch) {
  const int sm = arch.starts_with("sm_") ? std::atoi(std::string(arch.substr(3)).c_str()) : 0;
  return sm < 90 ? 0x160 : (sm < 100 ? 0x210 : 0x380);
}

Code analyze_sass(std::string_view sass_body, const SassParams* params) {
  Code code = loops_of(from_sass(sass_body, params));
  code.from = "SASS";
  return code;
}

std::map<std::string, std::string> sass_functions(std::string_view listing) {
  // nvdisasm prints each function's section as "//----- .text.<mangled name> -----", then its code.
  std::map<std::string, std::string> out;
  std::istringstream in{std::string(listing)};
  std::string* body = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("//--", 0) == 0) {
      body = nullptr;
      const auto t = line.find(".text.");
      if (t == std::string::npos) continue;
      const auto b = t + 6;
      const auto e = line.find_first_of(" \t", b);
      body = &out[line.substr(b, e == std::string::npos ? std::string::npos : e - b)];
      continue;
    }
    if (body != nullptr) *body += line + "\n";
  }
  return out;
}

// ---- trip counts: the code's integer part, run for one thread ----

namespace {

// A value the run knows (an integer) or not (loaded from memory, floating point, a shuffle's result).
using Value = std::optional<long long>;

// The first `most` of `items`, then how many more: "811, 815, 823, 827 and 4 more".
std::string first_few(const std::vector<std::string>& items, std::size_t most) {
  std::string out;
  for (std::size_t k = 0; k < items.size() && k < most; ++k) out += (k == 0 ? "" : ", ") + items[k];
  if (items.size() > most) out += fmt::format(" and {} more", items.size() - most);
  return out;
}

// What shared_conflicts finds along one trip: per trip, the wavefronts its shared accesses take and those their
// widths alone give, and the lines of the most conflicted accesses in words.
struct Conflicts {
  double measured = 0;
  double width_only = 0;
  std::size_t conflicted = 0;
  std::string lines;
  std::string guessed;  // the branches read as not taken, in words
};

// The width and signedness a PTX type suffix gives an integer operation (".s32": 32 bits, signed).
struct IntType {
  int bits = 64;
  bool is_signed = true;
  bool known = false;  // an integer type (.s32, .u64, .b32, ...); floating point is not
};
IntType int_type(std::string_view opcode) {
  IntType t;
  std::size_t pos = 0;
  while (pos != std::string_view::npos) {
    const std::size_t next = opcode.find('.', pos + 1);
    const std::string_view part = opcode.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
    if (part.size() >= 2 && (part[0] == 's' || part[0] == 'u' || part[0] == 'b') &&
        std::all_of(part.begin() + 1, part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      t.bits = std::stoi(std::string(part.substr(1)));
      t.is_signed = part[0] == 's';
      t.known = true;
    }
    pos = next;
  }
  return t;
}

// A value cut to the type's width, sign- or zero-extended back to 64 bits.
long long fit(long long v, const IntType& t) {
  if (t.bits >= 64) return v;
  const unsigned long long mask = (1ULL << t.bits) - 1;
  unsigned long long u = static_cast<unsigned long long>(v) & mask;
  if (t.is_signed && ((u >> (t.bits - 1)) & 1ULL) != 0) u |= ~mask;
  return static_cast<long long>(u);
}

bool compare(std::string_view how, long long a, long long b, const IntType& t) {
  const auto ua = static_cast<unsigned long long>(fit(a, {t.bits, false, true}));
  const auto ub = static_cast<unsigned long long>(fit(b, {t.bits, false, true}));
  const long long sa = fit(a, {t.bits, true, true}), sb = fit(b, {t.bits, true, true});
  const bool u = !t.is_signed;
  if (how == "eq") return ua == ub;
  if (how == "ne") return ua != ub;
  if (how == "lt" || how == "lo") return u || how == "lo" ? ua < ub : sa < sb;
  if (how == "le" || how == "ls") return u || how == "ls" ? ua <= ub : sa <= sb;
  if (how == "gt" || how == "hi") return u || how == "hi" ? ua > ub : sa > sb;
  if (how == "ge" || how == "hs") return u || how == "hs" ? ua >= ub : sa >= sb;
  throw std::invalid_argument("comparison");
}

// An integer immediate ("42", "-3", "0x1F"); floating-point immediates ("0f3F800000") are not.
Value immediate(std::string_view s) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) != 0 || s[0] == '-')) return std::nullopt;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'f' || s[1] == 'd' || s[1] == 'F' || s[1] == 'D')) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(std::string(s), &used, 0);
    if (used == s.size() || (used + 1 == s.size() && (s.back() == 'U' || s.back() == 'u'))) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// One thread's run through a kernel's PTX (thread `lane` of block 0: thread 0 unless asked): the registers whose
// values it knows, from the launch's sizes and integer arguments through the integer instructions, and the next
// statement of each step.
class Run {
 public:
  Run(const std::vector<Statement>& sts, const Work& w, long long lane = 0) : sts_(sts), w_(w), lane_(lane) {
    bool y_block = false, y_grid = false;
    for (const auto& s : sts) {
      for (const auto& o : s.operands) {
        if (o.find("%tid.y") != std::string::npos || o.find("%tid.z") != std::string::npos ||
            o.find("%ntid.y") != std::string::npos || o.find("%ntid.z") != std::string::npos) {
          y_block = true;
        }
        if (o.find("%ctaid.y") != std::string::npos || o.find("%ctaid.z") != std::string::npos ||
            o.find("%nctaid.y") != std::string::npos || o.find("%nctaid.z") != std::string::npos) {
          y_grid = true;
        }
      }
    }
    if (!y_block && w.block > 0) ntid_ = w.block;
    if (!y_grid && w.grid > 0) nctaid_ = static_cast<long long>(w.grid);
    one_dimensional_ = !y_block;
  }
  // Whether the code reads only the block's x dimension: thread `lane` is then lane `lane` of warp 0.
  bool one_dimensional() const { return one_dimensional_; }

  Value get(const std::string& operand) const {
    if (operand.empty()) return std::nullopt;
    if (operand[0] != '%') {
      const Value v = immediate(operand);
      return v ? v : symbol(operand);
    }
    if (operand == "%tid.x") return lane_;
    if (operand == "%laneid") return lane_ % 32;
    if (operand == "%ctaid.x" || operand == "%warpid" || operand == "%tid.y" || operand == "%tid.z" ||
        operand == "%ctaid.y" || operand == "%ctaid.z") {
      return 0;
    }
    if (operand == "%ntid.x") return ntid_;
    if (operand == "%nctaid.x") return nctaid_;
    const auto it = regs_.find(operand);
    return it == regs_.end() ? std::nullopt : it->second;
  }
  void set(const std::string& reg, Value v) { regs_[reg] = v; }
  // The address a memory operand names ("[%r5+16]", "[%rd2+-8]", "[smem]"), where the run knows it.
  Value address(const std::string& operand) const;
  // Whether the last step ran an instruction (not a label, nor one whose guard failed).
  bool ran() const { return ran_; }
  void unknown(const Statement& s) {
    if (s.operands.empty() || !writes_first_operand(s.opcode)) return;
    for (const auto& r : registers_in(s.operands[0])) regs_[r] = std::nullopt;
  }

  // A kernel parameter's value: an integer argument's, or for a pointer a place of its own (parameter i at
  // (i + 1) << 40), so that addresses compare and differ as on the GPU.
  Value param(const std::string& operand) const {
    const auto ref = param_ref(operand);
    if (!ref || ref->offset != 0) return std::nullopt;  // none, or a field of a struct argument past its first
    const auto i = static_cast<std::size_t>(ref->index);
    if (i < w_.reach.size() && w_.reach[i] > 0) return static_cast<long long>(i + 1) << 40;
    if (i < w_.scalars.size() && w_.scalars[i]) return *w_.scalars[i];
    return std::nullopt;
  }

  // Executes one instruction; returns the next statement's index (sts_.size(): the thread ended; nullopt: a
  // branch on an unknown value).
  std::optional<std::size_t> step(std::size_t pc, const std::map<std::string, std::size_t>& labels) {
    const Statement& s = sts_[pc];
    ran_ = false;
    if (!s.label.empty() || s.opcode.empty()) return pc + 1;
    const std::string& op = s.opcode;
    // The operands without the guard, which statements() keeps last.
    const std::span<const std::string> ops(s.operands.data(), s.operands.size() - (s.guarded ? 1 : 0));
    if (s.guarded) {
      const std::string& guard = s.operands.back();
      const bool negate = !guard.empty() && guard[0] == '!';
      const Value p = get(negate ? guard.substr(1) : guard);
      if (!p) {
        if (starts_with(op, "bra")) return std::nullopt;
        ran_ = true;  // it may run: read as run
        unknown(s);
        return pc + 1;
      }
      if ((*p != 0) == negate) return pc + 1;  // the guard fails: the instruction does nothing
    }
    ran_ = true;
    if (starts_with(op, "bra")) {
      const auto it = ops.empty() ? labels.end() : labels.find(ops[0]);
      if (it == labels.end()) return std::nullopt;
      return it->second;
    }
    if (starts_with(op, "ret") || starts_with(op, "exit") || starts_with(op, "trap")) return sts_.size();
    if (ops.empty() || !writes_first_operand(op)) return pc + 1;
    const std::string& d = ops[0];
    if (d.find_first_of("{|") != std::string::npos) {  // several destinations: a vector load, a predicate pair
      unknown(s);
      return pc + 1;
    }
    const IntType t = int_type(op);
    auto src = [&](std::size_t k) { return k < ops.size() ? get(ops[k]) : std::nullopt; };
    Value v;
    const auto base = op.substr(0, op.find('.'));
    if (starts_with(op, "ld.param")) {
      v = ops.size() > 1 ? param(ops[1]) : std::nullopt;
    } else if (starts_with(op, "mov") || starts_with(op, "cvta")) {
      v = src(1);
      if (v && t.known) v = fit(*v, t);
    } else if (starts_with(op, "cvt")) {
      // cvt.<to>.<from>: integer to integer only, cut to the destination type after the source's.
      const auto first = op.find('.'), second = op.find('.', first + 1);
      const IntType to = int_type(op.substr(first, second - first));
      const IntType from = int_type(op.substr(second));
      if (to.known && from.known && op.find(".f") == std::string::npos) {
        v = src(1);
        if (v) v = fit(fit(*v, from), to);
      }
    } else if (base == "setp" && ops.size() == 3) {
      const auto first = op.find('.'), second = op.find('.', first + 1);
      const std::string how = op.substr(first + 1, second - first - 1);
      const Value a = src(1), b = src(2);
      if (a && b && t.known) {
        try {
          v = compare(how, *a, *b, t) ? 1 : 0;
        } catch (const std::exception&) {
        }
      }
    } else if (base == "selp" && ops.size() == 4) {
      const Value p = src(3);
      if (p) v = *p != 0 ? src(1) : src(2);
    } else if (op == "and.pred" || op == "or.pred" || op == "xor.pred") {
      const Value a = src(1), b = src(2);
      if (a && b) v = op[0] == 'a' ? (*a && *b) : op[0] == 'o' ? (*a || *b) : ((*a != 0) != (*b != 0));
      else if (op[0] == 'a' && ((a && !*a) || (b && !*b))) v = 0;
      else if (op[0] == 'o' && ((a && *a) || (b && *b))) v = 1;
    } else if (op == "not.pred") {
      const Value a = src(1);
      if (a) v = *a == 0 ? 1 : 0;
    } else if (t.known) {
      const Value a = src(1), b = src(2), c = src(3);
      const bool wide = op.find(".wide") != std::string::npos;
      const IntType in = t;                                         // the operands' type
      const IntType out = wide ? IntType{t.bits * 2, t.is_signed, true} : t;  // the result's
      auto as = [&](const Value& x) { return fit(*x, in); };
      auto as_unsigned = [&](const Value& x) { return static_cast<unsigned long long>(fit(*x, {t.bits, false, true})); };
      if (base == "add" && a && b) v = as(a) + as(b);
      else if (base == "sub" && a && b) v = as(a) - as(b);
      else if (base == "mul" && a && b && op.find(".hi") == std::string::npos) v = as(a) * as(b);
      else if (base == "mul" && a && b && t.bits <= 32) v = (as(a) * as(b)) >> t.bits;  // .hi of 32-bit operands
      else if (base == "mad" && a && b && c && op.find(".hi") == std::string::npos) {
        v = as(a) * as(b) + fit(*c, out);
      } else if (base == "div" && a && b && as(b) != 0) {
        v = t.is_signed ? as(a) / as(b) : static_cast<long long>(as_unsigned(a) / as_unsigned(b));
      } else if (base == "rem" && a && b && as(b) != 0) {
        v = t.is_signed ? as(a) % as(b) : static_cast<long long>(as_unsigned(a) % as_unsigned(b));
      } else if (base == "shl" && a && b && *b >= 0 && *b < 64) {
        v = static_cast<long long>(static_cast<unsigned long long>(as(a)) << *b);
      } else if (base == "shr" && a && b && *b >= 0 && *b < 64) {
        v = t.is_signed ? as(a) >> *b : static_cast<long long>(as_unsigned(a) >> *b);
      } else if (base == "and" && a && b) v = as(a) & as(b);
      else if (base == "or" && a && b) v = as(a) | as(b);
      else if (base == "xor" && a && b) v = as(a) ^ as(b);
      else if (base == "not" && a) v = ~as(a);
      else if (base == "neg" && a) v = -as(a);
      else if (base == "min" && a && b) v = t.is_signed ? std::min(as(a), as(b)) : static_cast<long long>(std::min(as_unsigned(a), as_unsigned(b)));
      else if (base == "max" && a && b) v = t.is_signed ? std::max(as(a), as(b)) : static_cast<long long>(std::max(as_unsigned(a), as_unsigned(b)));
      else if (base == "abs" && a) v = std::llabs(as(a));
      if (v) v = fit(*v, out);
    }
    // Anything else (a load, a shuffle, an atomic, floating point) writes a value the run does not know.
    set(d, v);
    return pc + 1;
  }

 private:
  // A named variable's address (a __shared__ array, the dynamic shared buffer): each a place of its own, 1 MiB from
  // the next and at bank 0 of shared memory, as the CPU backend's traffic model places them (a request within one
  // variable conflicts the same way wherever the variable starts, by 4-byte steps).
  Value symbol(const std::string& name) const {
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_' || name[0] == '$')) {
      return std::nullopt;
    }
    const auto [it, added] = symbols_.emplace(name, static_cast<long long>(symbols_.size() + 1) << 20);
    return it->second;
  }

  const std::vector<Statement>& sts_;
  const Work& w_;
  long long lane_ = 0;
  bool one_dimensional_ = true;
  mutable std::map<std::string, long long> symbols_;
  Value ntid_, nctaid_;
  std::unordered_map<std::string, Value> regs_;
  bool ran_ = false;
};

// The global-load round trips one trip waits for one after another along `path` (the statements that ran, in order),
// as ptxas will issue them. A thread waits for its loads at the first instruction that reads what one of them loaded;
// ptxas issues the loads it can before that instruction, so a later load joins the loads in flight unless something
// between keeps it after the wait: a loop's branch (each trip of a staging loop loads after the last one's store), a
// branch that skips stores (the exit of an unrolled loop's remainder: its next trip's load and store run only if
// that trip does), a barrier, or an address computed from a loaded value (a page table's entry, then the page). A
// branch over a load alone (a bounds guard) is no such fence: ptxas predicates the load and issues it early. Loads
// that nothing on the path reads (for the next trip) wait for none. `starts`: the first load's line of each round.
double round_trips_along(const std::vector<Statement>& sts, const std::map<std::string, std::size_t>& labels,
                         const std::vector<std::size_t>& path, std::vector<int>& starts) {
  // Each statement read once, however often the path runs it (a nested staging loop: once a trip of it).
  std::vector<std::optional<Instr>> read(sts.size());
  std::vector<std::optional<bool>> fences(sts.size());
  const auto barrier = [](std::string_view op) { return starts_with(op, "bar.") || starts_with(op, "barrier"); };
  // What a branch that skips it keeps a later load behind: a barrier, a store, a reduction or an atomic.
  const auto orders = [&](std::string_view op) {
    return barrier(op) || starts_with(op, "st.") || starts_with(op, "red.") || starts_with(op, "atom");
  };
  const auto fence_at = [&](std::size_t i) {
    const std::string& op = sts[i].opcode;
    if (!starts_with(op, "bra")) return barrier(op);
    const auto it = sts[i].operands.empty() ? labels.end() : labels.find(sts[i].operands[0]);
    if (it == labels.end() || it->second <= i) return true;  // a loop's branch
    for (std::size_t j = i + 1; j < it->second; ++j) {
      if (orders(sts[j].opcode)) return true;  // the branch skips a store: a later load stays after it
    }
    return false;
  };
  const auto fence = [&](std::size_t i) {
    if (!fences[i]) fences[i] = fence_at(i);
    return *fences[i];
  };
  std::set<std::string> pending, derived;  // what loads in flight write, and what was computed from loaded values
  bool used = false, fenced = false;
  int first = 0;
  double rounds = 0;
  for (const std::size_t i : path) {
    if (!read[i]) read[i] = instr_of(sts[i]);
    const Instr& in = *read[i];
    bool reads_loaded = std::any_of(in.reads.begin(), in.reads.end(), [&](const std::string& r) {
      return pending.count(r) != 0 || derived.count(r) != 0;
    });
    if (in.global_load && used && (fenced || reads_loaded)) {  // the loads in flight were waited for: a round trip
      ++rounds;
      starts.push_back(first);
      pending.clear();
      derived.clear();
      used = fenced = reads_loaded = false;
    }
    for (const auto& r : in.writes) {
      pending.erase(r);
      if (reads_loaded) derived.insert(r);
      else derived.erase(r);
    }
    used = used || reads_loaded;
    if (in.global_load) {
      if (pending.empty()) first = in.line;
      pending.insert(in.writes.begin(), in.writes.end());
    }
    if (used && fence(i)) fenced = true;
  }
  if (used) {
    ++rounds;
    starts.push_back(first);
  }
  return rounds;
}

// A memory operand's base and offset ("[%r5+16]": %r5 and 16; "[%rd2+-8]"; "[smem]": smem and 0).
std::optional<std::pair<std::string, long long>> memory_operand(const std::string& operand) {
  if (operand.size() < 3 || operand.front() != '[' || operand.back() != ']') return std::nullopt;
  std::string base = operand.substr(1, operand.size() - 2);
  long long offset = 0;
  if (const auto plus = base.find('+', 1); plus != std::string::npos) {
    const Value off = immediate(base.substr(plus + 1));
    if (!off) return std::nullopt;
    offset = *off;
    base.resize(plus);
  }
  return std::pair(base, offset);
}

Value Run::address(const std::string& operand) const {
  const auto at = memory_operand(operand);
  if (!at) return std::nullopt;
  const Value base = get(at->first);
  return base ? Value(*base + at->second) : std::nullopt;
}

// Where a run stands against the first trip of a loop (`span`: its head, its closing branch + 1): before it, during
// it (from the head's first run to its second, or to leaving the loop), or after it. No span: never during.
class FirstTrip {
 public:
  FirstTrip() = default;
  explicit FirstTrip(std::pair<std::size_t, std::size_t> span) : b_(span.first), e_(span.second) {}
  // The run goes on to statement `next`: true where that ends the trip.
  bool go(std::size_t next) {
    if (state_ == before && next == b_) {
      state_ = during;
    } else if (state_ == during && (next == b_ || next < b_ || next >= e_)) {
      state_ = after;
      return true;
    }
    return false;
  }
  bool during_it() const { return state_ == during; }
  bool over() const { return state_ == after; }

 private:
  std::size_t b_ = std::numeric_limits<std::size_t>::max(), e_ = std::numeric_limits<std::size_t>::max();
  enum { before, during, after } state_ = before;
};

// How a statement asks shared memory for data, as requests of the warp: the bytes each lane names in each, the lanes
// that name them (ldmatrix .x1 reads the 8 rows lanes 0-7 name, .x2 16, .x4 32: 16 bytes each), which operand is the
// address, and for a WMMA fragment (m16n16k16, FP16 inputs) the operand of its leading dimension and the requests the
// lanes' pieces make (piece_at). No lanes: no request the count measures.
struct SharedShape {
  int bytes = 0;
  int lanes = 0;
  std::size_t address = 0;
  int requests = 1;
  int element = 0;      // a WMMA fragment's element bytes (0: not a fragment)
  bool accumulator = false;  // a WMMA accumulator (load.c, store.d): row-major only
  std::size_t ldm = 0;  // a WMMA fragment's leading-dimension operand
};
SharedShape shared_shape(const Statement& s) {
  const std::string& op = s.opcode;
  if (s.operands.size() < 2) return {};
  const bool store = starts_with(op, "st") || op.find(".store") != std::string::npos;  // the address first
  if (const int n = matrices_of(op); n > 0) return {16, 8 * n, store ? 0U : 1U};
  if (shared_access(op)) return {std::max(1, ptx::access_bits(op) / 8), 32, store ? 0U : 1U};
  // cp.async [shared], [global], bytes: each lane's copy lands at its shared address.
  if (starts_with(op, "cp.async") && op.find(".shared") != std::string::npos && s.operands.size() >= 3) {
    const Value bytes = immediate(s.operands[2]);
    return {bytes ? static_cast<int>(*bytes) : 16, 32, 0U};
  }
  // WMMA on shared memory, as the SASS of sm_80 and later makes it: an A or B fragment (16 x 16 halves) is one
  // ldmatrix .x4, lanes naming its 16 rows' two 16-byte halves; a row-major accumulator is four requests (rows g and
  // g + 8 of columns 2t, 2t + 1 and those 8 columns on, g = lane / 4, t = lane % 4), 8 bytes a lane in FP32 (LDS.64,
  // STS.64), 4 in FP16. Which addresses make up each request follows mma.sync's fragment layout, an assumption: CUDA
  // leaves WMMA's fragments opaque. Other shapes and types are not measured.
  if (starts_with(op, "wmma.") && op.find(".shared") != std::string::npos && op.find(".m16n16k16") != std::string::npos &&
      s.operands.size() >= 3) {
    const bool ab = op.find(".load.a") != std::string::npos || op.find(".load.b") != std::string::npos;
    if (ab && op.find(".f16") != std::string::npos) return {16, 32, 1U, 1, 2, false, 2U};
    const bool c = op.find(".load.c") != std::string::npos || op.find(".store.d") != std::string::npos;
    if (c && op.find(".row") != std::string::npos) {
      const int element = op.find(".f32") != std::string::npos ? 4 : op.find(".f16") != std::string::npos ? 2 : 0;
      if (element > 0) return {2 * element, 32, store ? 0U : 1U, 4, element, true, 2U};
    }
  }
  return {};
}

// Lane `lane`'s address in request `j` of a statement of shape `shape` whose address operand is `base` and leading
// dimension `ldm` (WMMA's, in elements).
long long piece_at(const SharedShape& shape, long long lane, int j, long long base, long long ldm) {
  if (shape.element == 0) return base;
  if (!shape.accumulator) return base + ((lane % 16) * ldm + 8 * (lane / 16)) * shape.element;
  const long long row = lane / 4 + 8 * (j % 2), col = 2 * (lane % 4) + 8 * (j / 2);
  return base + (row * ldm + col) * shape.element;
}

// The shared accesses of [b, e) that ptxas issues as one: in a straight run of code (no label, branch or barrier
// between), accesses of one kind and width from one base register (not written between) at offsets one after
// another become one access of up to 16 bytes (four ld.shared.f32 at +0, +4, +8, +12 are one LDS.128) where each
// lane's address is aligned to the wider width (`aligned`, from the lanes' addresses). Each group in order of its
// first statement; an access alone is a group of one.
template <typename Aligned>
std::vector<std::vector<std::size_t>> vector_groups(const std::vector<Statement>& sts, std::size_t b, std::size_t e,
                                                    Aligned aligned) {
  std::vector<std::vector<std::size_t>> groups;
  // Accesses under way per (kind and width, base): their offsets and statements.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<long long, std::size_t>>> open;
  const auto close = [&](const auto& it) {
    auto chain = it->second;
    std::stable_sort(chain.begin(), chain.end());
    const long long width = std::max(1, ptx::access_bits(sts[chain.front().second].opcode) / 8);
    for (std::size_t k = 0; k < chain.size();) {
      // The most statements (a power of two, 16 bytes at most) from k at offsets one after another, aligned.
      std::size_t n = 1;
      for (std::size_t m = 16 / static_cast<std::size_t>(width); m > 1; m /= 2) {
        bool contiguous = k + m <= chain.size();
        for (std::size_t j = 1; contiguous && j < m; ++j) {
          contiguous = chain[k + j].first == chain[k].first + static_cast<long long>(j) * width;
        }
        if (contiguous && aligned(chain[k].second, static_cast<long long>(m) * width)) {
          n = m;
          break;
        }
      }
      std::vector<std::size_t> group;
      for (std::size_t j = 0; j < n; ++j) group.push_back(chain[k + j].second);
      std::sort(group.begin(), group.end());
      groups.push_back(std::move(group));
      k += n;
    }
  };
  const auto close_all = [&] {
    for (auto it = open.begin(); it != open.end(); ++it) close(it);
    open.clear();
  };
  for (std::size_t i = b; i < e && i < sts.size(); ++i) {
    const Statement& s = sts[i];
    if (!s.label.empty() || starts_with(s.opcode, "bra") || starts_with(s.opcode, "bar")) {
      close_all();
      continue;
    }
    const SharedShape shape = shared_shape(s);
    if (shape.lanes > 0 && !shared_access(s.opcode)) {
      groups.push_back({i});  // ldmatrix, stmatrix, WMMA, cp.async: requests of their own
    } else if (shape.lanes > 0) {
      const auto at = memory_operand(s.operands[shape.address]);
      const std::string kind = fmt::format("{}{}", s.opcode.substr(0, 2), ptx::access_bits(s.opcode));
      if (at && !s.guarded && ptx::access_bits(s.opcode) < 128) open[{kind, at->first}].emplace_back(at->second, i);
      else groups.push_back({i});
    }
    // What it writes ends the runs based on it.
    if (!s.operands.empty() && writes_first_operand(s.opcode)) {
      for (const auto& r : registers_in(s.operands[0])) {
        for (auto it = open.begin(); it != open.end();) {
          if (it->first.second == r) {
            close(it);
            it = open.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
  }
  close_all();
  std::sort(groups.begin(), groups.end());
  return groups;
}

// The bank conflicts of one trip of the hot loop (`span`), the first: warp 0's 32 lanes each run the PTX's integer
// part until that trip ends (`budget` steps each), and the n-th run of an access in each lane is one request of the
// warp (accesses that ptxas issues as one, vector_groups, one request). A request takes what the GPU's shared memory
// takes to serve it: 32 banks of 4-byte words, each bank one distinct word per wavefront (lanes that read one word
// share it), at least one wavefront per 128 bytes the lanes use; the CPU backend's traffic model counts the same way
// (docs/cpu-mode.md, "Shared memory: bank conflicts"). The static count (wavefronts_of) gives each access the
// wavefronts of its width alone; what a request takes beyond its width's count, per run, is the trip's extra (0 where
// no lane's trip is known). A request that takes fewer (a broadcast) is counted at its width: the static count stands.
Conflicts shared_conflicts(const std::vector<Statement>& sts, const std::map<std::string, std::size_t>& labels,
                           const Work& w, std::pair<std::size_t, std::size_t> span, long long budget) {
  Conflicts out;
  const auto [b, e] = span;
  bool any = false;
  for (std::size_t i = b; i < e && i < sts.size(); ++i) any = any || shared_shape(sts[i]).lanes > 0;
  if (!any || w.block < 32) return out;
  // Per statement, per run of it in the trip, per request of the run, per lane: whether the lane ran it, and its
  // address (unknown: nullopt).
  struct Slot {
    bool ran = false;
    Value at;
  };
  using Lanes = std::array<Slot, 32>;
  std::map<std::size_t, std::vector<std::vector<Lanes>>> requests;
  std::set<int> guessed;  // lines of branches on unknown values, read as not taken
  for (long long lane = 0; lane < 32; ++lane) {
    Run run(sts, w, lane);
    if (!run.one_dimensional()) return out;  // lanes 0-31 are not warp 0 when the block has a y dimension
    std::map<std::size_t, std::size_t> runs;
    FirstTrip trip(span);
    std::size_t pc = 0;
    for (long long n = 0; n < budget && pc < sts.size() && !trip.over(); ++n) {
      const Statement& s = sts[pc];
      const SharedShape shape = trip.during_it() ? shared_shape(s) : SharedShape{};
      const bool shared = lane < shape.lanes;  // the lanes whose addresses the request reads
      const Value at = shared ? run.address(s.operands[shape.address]) : std::nullopt;
      const Value ldm = shared && shape.element > 0 ? run.get(s.operands[shape.ldm]) : Value(0);
      const std::optional<std::size_t> next = run.step(pc, labels);
      if (shared && run.ran()) {
        auto& per_run = requests[pc];
        const std::size_t k = runs[pc]++;
        if (per_run.size() <= k) per_run.resize(k + 1, std::vector<Lanes>(static_cast<std::size_t>(shape.requests)));
        for (int j = 0; j < shape.requests; ++j) {
          per_run[k][static_cast<std::size_t>(j)][static_cast<std::size_t>(lane)] = {
              true, at && ldm ? Value(piece_at(shape, lane, j, *at, *ldm)) : std::nullopt};
        }
      }
      // A branch on a value the run does not know (a floating-point test: a row's running maximum) is read as not
      // taken, in every lane alike: the accesses either way are what the trip's requests are made of.
      if (!next) guessed.insert(s.line);
      const std::size_t to = next ? *next : pc + 1;
      trip.go(to);
      pc = to;
    }
    if (!trip.over()) return out;
  }
  if (!guessed.empty()) {
    std::vector<std::string> lines;
    for (const int line : guessed) lines.push_back(std::to_string(line));
    out.guessed = fmt::format("; the branch{} at PTX line{} {}, on values it does not know, read as not taken",
                              guessed.size() == 1 ? "" : "es", guessed.size() == 1 ? "" : "s", first_few(lines, 4));
  }
  // Whether every lane that ran statement i's first run has its address aligned to `bytes`.
  const auto aligned = [&](std::size_t i, long long bytes) {
    const auto it = requests.find(i);
    if (it == requests.end() || it->second.empty()) return false;
    for (const Slot& slot : it->second.front().front()) {
      if (slot.ran && (!slot.at || *slot.at % bytes != 0)) return false;
    }
    return true;
  };
  struct Worst {
    int line;
    double ways;
  };
  std::vector<Worst> worst;
  for (const auto& group : vector_groups(sts, b, e, aligned)) {
    const auto first = requests.find(group.front());
    if (first == requests.end()) continue;  // not run on the path
    const SharedShape shape = shared_shape(sts[group.front()]);
    const long long bytes = static_cast<long long>(shape.bytes) * static_cast<long long>(group.size());
    // What the static count gives the group's statements (their widths; ldmatrix one per matrix).
    double width = 0;
    for (const std::size_t m : group) width += instr_of(sts[m]).wavefronts;
    const double width_each = width / shape.requests;  // a WMMA accumulator's four requests share it
    double taken = 0, ideal_sum = 0;
    int known = 0;
    for (const auto& run_k : first->second) {
      // Each request: the lanes that ran the group's first statement, over the group's bytes.
      double run_taken = 0, run_ideal = 0;
      bool unknown = false;
      // Lanes of 16 bytes are served 8 at a time, 128 bytes (an ldmatrix's matrices: each group of 8 lanes is one
      // transaction), and only lanes of one group conflict, as the traffic model counts them.
      const std::size_t phase_lanes = bytes >= 16 ? 8 : 32;
      for (const Lanes& lanes : run_k) {
        std::size_t words = 0;
        double served = 0;
        for (std::size_t phase = 0; phase < 32 && !unknown; phase += phase_lanes) {
          std::set<long long> phase_words;
          for (std::size_t l = phase; l < phase + phase_lanes; ++l) {
            const Slot& slot = lanes[l];
            if (!slot.ran) continue;
            if (!slot.at) unknown = true;
            else for (long long word = *slot.at / 4; word <= (*slot.at + bytes - 1) / 4; ++word) phase_words.insert(word);
          }
          if (phase_words.empty()) continue;
          std::array<int, 32> per_bank{};
          for (const long long word : phase_words) ++per_bank[static_cast<std::size_t>(((word % 32) + 32) % 32)];
          served += *std::max_element(per_bank.begin(), per_bank.end());
          words += phase_words.size();
        }
        if (unknown || words == 0) break;
        const double ideal = std::max<double>(1, std::ceil(4.0 * static_cast<double>(words) / 128));
        run_taken += std::max<double>({width_each, ideal, served});
        run_ideal += ideal;
      }
      if (unknown || run_ideal == 0) continue;
      taken += run_taken;
      ideal_sum += run_ideal;
      ++known;
    }
    if (known == 0) continue;
    out.measured += taken / known;
    out.width_only += width;
    if (taken / ideal_sum >= 1.5 && taken > width * known) worst.push_back({sts[group.front()].line, taken / ideal_sum});
  }
  std::stable_sort(worst.begin(), worst.end(), [](const Worst& x, const Worst& y) { return x.ways > y.ways; });
  std::vector<std::string> lines;
  for (const Worst& x : worst) lines.push_back(fmt::format("{} ({:.1f}-way)", x.line, x.ways));
  out.conflicted = worst.size();
  out.lines = first_few(lines, 4);
  return out;
}

}  // namespace

void count_trips(Code& code, std::string_view ptx_body, const Work& w) {
  code.trips = Trips{};
  code.trips.head_runs.assign(code.loops.size(), 0);
  if (code.spans.size() != code.loops.size() || code.spans.empty()) return;
  const std::vector<Statement> sts = statements(ptx_body);
  std::map<std::string, std::size_t> labels;
  for (std::size_t i = 0; i < sts.size(); ++i) {
    if (!sts[i].label.empty()) labels[sts[i].label] = i;
  }
  const std::size_t loops = code.spans.size();
  const auto hot = static_cast<std::size_t>(std::max(code.hot, 0));
  // Per loop: head runs in the entries completed so far, and in the entry under way.
  std::vector<double> done(loops, 0), current(loops, 0);
  // The statements the hot loop's first trip ran, from its head's first run to its second (or to leaving the loop).
  std::vector<std::size_t> path;
  FirstTrip trip = hot < loops ? FirstTrip(code.spans[hot]) : FirstTrip();
  Run run(sts, w);
  // Instructions: the course's kernels run at most about 500,000 for thread 0 (Lab 04's blocktile rung); the budget
  // keeps a kernel that would run far longer (a huge grid-stride loop on a small grid) to a few seconds.
  constexpr long long kBudget = 4'000'000;
  std::size_t pc = 0;
  long long trip_ended = 0;  // the steps thread 0 took to the end of the hot loop's first trip
  for (long long n = 0; n < kBudget && pc < sts.size(); ++n) {
    const std::optional<std::size_t> next = run.step(pc, labels);
    if (!next) break;
    // On the path: what ran, and each branch the thread came to, taken or not (a branch that skips stores keeps a
    // later load after them either way).
    if (trip.during_it() && (run.ran() || starts_with(sts[pc].opcode, "bra"))) path.push_back(pc);
    for (std::size_t i = 0; i < loops; ++i) {
      const auto [b, e] = code.spans[i];
      const bool inside = *next >= b && *next < e;
      if (*next == b) current[i] += 1;
      if (!inside && pc >= b && pc < e) {  // left the loop: its entry is complete
        done[i] += current[i];
        current[i] = 0;
      }
    }
    if (trip.go(*next)) trip_ended = n + 1;
    pc = *next;
  }
  if (pc >= sts.size()) {  // the thread ended: every entry is complete
    for (std::size_t i = 0; i < loops; ++i) done[i] += current[i];
  }
  code.trips.head_runs = done;
  // Warp 0's lanes through the same trip (with room for lanes whose path is longer than thread 0's; a bounded run
  // where thread 0's stopped at a branch on a value it does not know).
  if (hot < loops) {
    const Conflicts conflicts =
        shared_conflicts(sts, labels, w, code.spans[hot], trip.over() ? 2 * trip_ended + 10'000 : 100'000);
    if (conflicts.measured > 0) {
      code.trips.conflict_wavefronts = conflicts.measured - conflicts.width_only;
      code.trips.conflict_why = fmt::format(
          "{:g} wavefronts a trip where the accesses' widths alone take {:g}, from the addresses warp 0's 32 lanes "
          "compute on the hot loop's first trip (its PTX's integer part run for each lane{}){}",
          conflicts.measured, conflicts.width_only, conflicts.guessed,
          conflicts.lines.empty() ? ": no bank conflicts"
                                  : fmt::format(": bank conflicts at PTX line{} {}",
                                                conflicts.conflicted == 1 ? "" : "s", conflicts.lines));
    }
  }
  if (hot >= loops || done[hot] <= 0) return;
  code.trips.hot_trips = done[hot];
  code.trips.trips_why = fmt::format("the hot loop runs {:g} trip{} for thread 0 of block 0 at the timed launch (its PTX's "
                                     "integer part run with the launch's sizes and integer arguments)",
                                     done[hot], done[hot] == 1 ? "" : "s");
  if (!trip.over()) return;  // the run ended inside the first trip: its path is not known
  std::vector<int> starts;
  const double rounds = round_trips_along(sts, labels, path, starts);
  if (rounds <= 0) return;
  code.trips.round_trips = rounds;
  // The lines the round trips start at, each once, in order, with how often (a staging loop's load: once a trip of it).
  std::vector<std::pair<int, int>> at;
  for (const int line : starts) {
    const auto it = std::find_if(at.begin(), at.end(), [&](const auto& a) { return a.first == line; });
    if (it == at.end()) at.emplace_back(line, 1);
    else ++it->second;
  }
  std::string lines;
  for (std::size_t k = 0; k < at.size() && k < 6; ++k) {
    lines += fmt::format("{}{}{}", k == 0 ? "" : ", ", at[k].first,
                         at[k].second > 1 ? fmt::format(" ({} times)", at[k].second) : "");
  }
  if (at.size() > 6) lines += ", ...";
  code.trips.round_trips_why =
      fmt::format("{:g} a trip (the loads of PTX line{} {}, each used before the next is issued, along the path thread "
                  "0 of block 0 ran); the hot loop ran {:g} trips",
                  rounds, at.size() == 1 ? "" : "s", lines, done[hot]);
}

// ---- constants ----

Constants load_constants(const std::filesystem::path& file, const GpuSpec& gpu) {
  std::ifstream in(file);
  if (!in) throw DataError(file.string() + ": cannot open (the performance model's constants)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw DataError(file.string() + ": not JSON: " + e.what());
  }
  const std::string arch = gpu.arch();
  if (!j.contains("architectures") || !j["architectures"].contains(arch)) {
    throw DataError(fmt::format("{}: architectures.{}: missing (the performance model has no constants for the {})",
                                file.string(), arch, gpu.name));
  }
  const auto& a = j["architectures"][arch];
  Constants c;
  c.arch = arch;
  auto num = [&](const char* key, double& out) {
    if (!a.contains(key)) throw DataError(fmt::format("{}: architectures.{}.{}: missing", file.string(), arch, key));
    const auto& v = a[key];
    const auto& value = v.is_object() ? v.at("value") : v;
    if (!value.is_number()) throw DataError(fmt::format("{}: architectures.{}.{}: not a number", file.string(), arch, key));
    out = value.get<double>();
  };
  num("issue_per_clock", c.issue_per_clock);
  num("mufu_per_clock", c.mufu_per_clock);
  num("shared_wavefronts_per_clock", c.shared_wavefronts_per_clock);
  num("mma_sync_ceiling", c.mma_sync_ceiling);
  num("knee_latency_ns", c.knee_latency_ns);
  num("curve_exponent", c.curve_exponent);
  num("copy_fraction", c.copy_fraction);
  num("issue_efficiency", c.issue_efficiency);
  num("barrier_latency_ns", c.barrier_latency_ns);
  num("cache_reuse", c.cache_reuse);
  num("cache_l2_share", c.cache_l2_share);
  // Optional: null where no figure is published or argued for the architecture.
  if (a.contains("l2_bytes_per_clock")) {
    const auto& v = a["l2_bytes_per_clock"];
    const auto& value = v.is_object() ? v.at("value") : v;
    if (!value.is_null()) num("l2_bytes_per_clock", c.l2_bytes_per_clock);
  }
  c.provenance = a.value("provenance", std::string{});
  // HMMA.16816 per SM per clock at the dense FP16 peak, from the GPU's own figures.
  const auto fp16 = peak_flops(gpu, DType::fp16);
  const double tclock = gpu.tensor_clock_mhz.value_or(gpu.boost_clock_mhz.value_or(0)) * 1e6;
  if (fp16 && gpu.sms && tclock > 0) c.hmma_per_clock = *fp16 / (*gpu.sms * tclock * 2 * 2048);
  return c;
}

Constants constants_for(const GpuSpec& gpu) { return load_constants(data_dir() / "perf_model.json", gpu); }

std::string time_text(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} us", s * 1e6);
}

// ---- prediction ----

namespace {
std::string kb(double bytes) { return fmt::format("{:.1f} KB", bytes / 1024); }
std::string bytes_text(double b) { return b >= 1e9 ? fmt::format("{:.3g} GB", b / 1e9) : fmt::format("{:.3g} MB", b / 1e6); }

struct Limit {
  std::string name;
  double fraction;  // of the roof this measure alone allows
  std::string advice;
};
}  // namespace

namespace {
// The pointer parameters of a load's address: those whose argument reaches memory (scalars such as a length
// reach none).
std::vector<int> pointers_of(const std::vector<int>& params, const std::vector<double>& reach) {
  std::vector<int> out;
  for (const int k : params) {
    if (k >= 0 && static_cast<std::size_t>(k) < reach.size() && reach[static_cast<std::size_t>(k)] > 0) out.push_back(k);
  }
  return out;
}

// The parameters whose data a trip reads from the caches: each pointer whose loads in the trip, at the kernel's
// rate (its declared DRAM bytes over the bytes a trip moves), read its reach at least `cache_reuse` times over,
// and whose reach fits in the L2's share. A stream is read about once (a copy's x: once; a GEMV's weights: once),
// a bias vector once per row, a GEMV's x once per row of weights.
std::set<int> reused_params(const Work& w, const Trip& t, const GpuSpec& gpu, const Constants& c,
                            std::vector<std::string>* evidence) {
  std::set<int> out;
  const double moves = moved(t);
  if (w.reach.empty() || moves <= 0 || w.bytes <= 0) return out;
  std::map<int, double> bytes;  // per pointer: the trip's load bytes whose address comes from it alone
  for (const auto& l : t.loads) {
    const auto ptrs = pointers_of(l.params, w.reach);
    if (ptrs.size() == 1) bytes[ptrs.front()] += l.bytes;
  }
  const double l2 = gpu.l2_mb.value_or(0) * 1024 * 1024;
  for (const auto& [k, b] : bytes) {
    const double reach = w.reach[static_cast<std::size_t>(k)];
    const double reuse = w.bytes * b / moves / reach;
    if (reuse < c.cache_reuse || reach > c.cache_l2_share * l2) continue;
    out.insert(k);
    if (evidence != nullptr) {
      evidence->push_back(fmt::format("reused data: argument {} reaches {} and the loop reads it about {:.0f} times over "
                                      "({:g} B of {:g} B a trip moves, at the kernel's {:.1f} MB): the caches serve its "
                                      "loads, not DRAM",
                                      k + 1, kb(reach), reuse, b, moves, w.bytes / 1e6));
    }
  }
  return out;
}

// Whether the caches serve a load: its address comes from pointers, each of them reused.
bool cached(const Trip::Load& l, const std::set<int>& reused, const std::vector<double>& reach) {
  const auto ptrs = pointers_of(l.params, reach);
  return !ptrs.empty() && std::all_of(ptrs.begin(), ptrs.end(), [&](int k) { return reused.count(k) != 0; });
}

// The bytes of a trip's loads that the caches serve: all of them, or those issued before the first use.
double cached_bytes(const Trip& t, const std::set<int>& reused, const std::vector<double>& reach,
                    bool before_use_only) {
  double out = 0;
  for (const auto& l : t.loads) {
    if ((l.before_use || !before_use_only) && cached(l, reused, reach)) out += l.bytes;
  }
  return out;
}
// The DRAM bytes a trip moves: its loads, stores and copies, less the loads of data the caches serve (reused_params
// of the same trip).
double dram_bytes_of(const Trip& t, const Work& w, const GpuSpec& gpu, const Constants& c) {
  return moved(t) - cached_bytes(t, reused_params(w, t, gpu, c, nullptr), w.reach, false);
}

// The hot loop's trip with the bank conflicts count_trips found added to its shared-memory wavefronts (the
// wavefronts its first trip's requests take beyond their widths' count), and the evidence line that says so.
Trip with_conflicts(const Code& code, Trip hot, std::vector<std::string>& evidence) {
  if (code.trips.conflict_why.empty()) return hot;
  hot.shared_wavefronts = std::max(0.0, hot.shared_wavefronts + code.trips.conflict_wavefronts);
  evidence.push_back(fmt::format("  shared memory: {}{}", code.trips.conflict_why,
                                 code.from == "SASS" ? " (read from the PTX; the SASS's count moves by the same)" : ""));
  return hot;
}

// The hot loop's trip with the work of its passes (Code::passes) added. A pass reads an array the hot loop reads (the
// same pointer arguments in its address, as far as the launch's reach tells pointers from scalars; without it, the
// same parameters), as many bytes of it a trip: the two loops walk the array in the same steps, one trip each per
// piece. A loop that reads fewer bytes of it a trip is a tail (the elements a vectorized loop left, one at a time) or
// a narrow copy for misaligned data: it covers part of the array, or runs instead of the hot loop, and is not added.
// A pass's instructions, pipes and stores are added to the trip; its loads of the array are the same bytes again
// (the declared bytes count them once) and add none, its loads of other arrays do. Loads in flight stay the hot
// loop's. An array the caches serve (reused data) is no measure of a pass.
//
// A pass reads the array again. Between a thread's two reads of an element every resident thread on the GPU reads its
// own part of the array (its trips times the bytes a trip reads of it; a thread's trips are the declared bytes over
// the grid's threads and the DRAM bytes a trip moves): past the L2's share (cache_l2_share) the L2 no longer holds
// the element and DRAM serves it again, `reread` bytes a trip beyond the declared ones. With no grid known the L2 is
// taken to serve it, and the evidence says so.
struct Beside {
  Trip trip;
  double reread = 0;  // DRAM bytes a thread reads again per trip of the hot loop
};

Beside with_passes(const Code& code, const Trip& hot, const Work& w, const GpuSpec& gpu, const Constants& c,
                   std::vector<std::string>& evidence) {
  Beside out{hot, 0};
  Trip& t = out.trip;
  if (code.passes.empty()) return out;
  const std::set<int> reused = reused_params(w, hot, gpu, c, nullptr);
  // A load's array: its pointer arguments where the reach tells them, else its parameters.
  const auto array_of = [&](const Trip::Load& l) { return w.reach.empty() ? l.params : pointers_of(l.params, w.reach); };
  // The bytes a trip of `trip` reads of array `a` (a load whose address comes from a's pointers, and maybe others).
  const auto reads_of = [&](const Trip& trip, const std::vector<int>& a) {
    double bytes = 0;
    for (const auto& l : trip.loads) {
      const auto mine = array_of(l);
      const bool of_a = w.reach.empty() ? mine == a : std::includes(mine.begin(), mine.end(), a.begin(), a.end());
      if (of_a && !cached(l, reused, w.reach)) bytes += l.bytes;
    }
    return bytes;
  };
  std::vector<double> again;  // per pass: the bytes a trip reads of the array it reads again
  for (const int i : code.passes) {
    const Trip& p = code.loops.at(static_cast<std::size_t>(i));
    std::vector<int> shared;
    double bytes = 0;
    for (const auto& l : p.loads) {
      const auto a = array_of(l);
      if (a.empty() || cached(l, reused, w.reach)) continue;
      double mine = 0;
      for (const auto& m : p.loads) mine += array_of(m) == a ? m.bytes : 0;
      if (mine > 0 && reads_of(hot, a) == mine) {
        shared = a;
        bytes = mine;
        break;
      }
    }
    if (shared.empty()) continue;
    t.instructions += p.instructions;
    t.ffma += p.ffma;
    t.hfma2 += p.hfma2;
    t.mufu += p.mufu;
    t.conversions += p.conversions;
    t.shared_wavefronts += p.shared_wavefronts;
    t.hmma += p.hmma;
    t.global_stores += p.global_stores;
    t.store_bytes += p.store_bytes;
    for (const auto& l : p.loads) {
      const auto a = array_of(l);
      if (!a.empty() && reads_of(hot, a) > 0) continue;
      t.loads.push_back({l.params, l.bytes, false, false});
      t.load_bytes += l.bytes;
      ++t.global_loads;
    }
    std::string names;
    for (const int a : shared) names += fmt::format("{}{}", names.empty() ? "" : ", ", a + 1);
    evidence.push_back(fmt::format(
        "  a pass beside it: lines {}-{} run before or after it and read the same array (argument{} {}) as many bytes "
        "a trip ({:g} B): a kernel that reads its input in two passes spends both loops' instructions on each byte, "
        "so the pass's {} instructions{}{} a trip are added",
        p.first_line, p.last_line, shared.size() == 1 ? "" : "s", names, bytes, p.instructions,
        p.mufu + p.conversions > 0 ? fmt::format(", {} MUFU and conversions", p.mufu + p.conversions) : "",
        p.store_bytes > 0 ? fmt::format(", {:g} B of stores", p.store_bytes) : ""));
    again.push_back(bytes);
  }
  const double dram_trip = dram_bytes_of(t, w, gpu, c);
  const double l2 = gpu.l2_mb.value_or(0) * 1024 * 1024;
  for (const double bytes : again) {
    if (w.grid == 0 || dram_trip <= 0 || l2 <= 0) {
      evidence.push_back("    its reads come again while the L2 may hold them (no grid is known to tell how much is read "
                         "in between): the L2 is taken to serve them");
      continue;
    }
    const double trips = w.bytes / (static_cast<double>(w.grid) * w.block * dram_trip);
    const double resident = gpu.sms.value_or(1) * std::max(w.blocks_per_sm, 1) * static_cast<double>(w.block);
    const double between = bytes * trips * resident;
    const bool dram = between > c.cache_l2_share * l2;
    if (dram) out.reread += bytes;
    evidence.push_back(fmt::format(
        "    between a thread's two reads of an element the GPU's {:g} resident threads read {} of the array ({:.1f} "
        "trips a thread, {:g} B a trip): {} the {:.0f}% of the L2's {} that holds data read again, so {}",
        resident, bytes_text(between), trips, bytes, dram ? "more than" : "within", 100 * c.cache_l2_share, bytes_text(l2),
        dram ? fmt::format("DRAM serves the second read: {:g} B a trip beyond the declared bytes", bytes)
             : std::string("the L2 serves the second read")));
  }
  return out;
}

}  // namespace

double in_flight_fraction(double bytes_per_sm, double copy_bytes_per_s_per_sm, const Constants& c) {
  if (bytes_per_sm <= 0) return 0;
  const double knee = c.knee_latency_ns * 1e-9 * copy_bytes_per_s_per_sm;
  return 1 / (1 + std::pow(knee / bytes_per_sm, c.curve_exponent));
}

Prediction predict(const Work& w, const Code& code, const GpuSpec& gpu, const Constants& c) {
  Prediction p;
  // The hot loop's trip, with its bank conflicts and the work of the passes beside it (each said in the evidence,
  // after the code line).
  std::vector<std::string> beside;
  const Trip hot = with_conflicts(code, code.loops.at(static_cast<std::size_t>(std::max(code.hot, 0))), beside);
  const Beside with = with_passes(code, hot, w, gpu, c, beside);
  const Trip& h = with.trip;
  const double sms = gpu.sms.value_or(1);
  const double clock = gpu.boost_clock_mhz.value_or(1000) * 1e6;
  const double copy_bw = w.copy_ceiling_gbps ? *w.copy_ceiling_gbps * 1e9 : gpu.bandwidth_gbps * 1e9 * c.copy_fraction;
  const auto peak_opt = peak_flops(gpu, w.dtype);
  const double peak = peak_opt.value_or(gpu.fp32_tflops * 1e12);
  // Rereads (issue 37's "L2 rereads next to DRAM bytes"): declared bytes far past what the launch's arrays hold
  // are the same data read again, a tiled GEMM's strips of A and B by every block of a row or column. On a GPU the
  // L2 serves most of them (the blocks that run at once share their strips): DRAM moves the arrays at least once,
  // the L2 every declared byte. Where the architecture's L2 rate is known (data/perf_model.json), the memory side
  // is the slower of the two; where not, every declared byte at DRAM's rate, the slow end.
  double footprint = 0;
  for (const double r : w.reach) footprint += r;
  const bool rereads = footprint > 0 && w.bytes > 2 * footprint;
  // The L2's share of its rate that a kernel sustains is taken to be the copy ceiling's share of DRAM's (argued).
  const double copy_share = gpu.bandwidth_gbps > 0 ? copy_bw / (gpu.bandwidth_gbps * 1e9) : c.copy_fraction;
  const double l2_bw = c.l2_bytes_per_clock * clock * copy_share;
  const bool l2_level = rereads && l2_bw > 0;
  const bool l2_roof = l2_level && w.bytes / l2_bw >= footprint / copy_bw;  // the L2's time is the slower
  const double t_mem = l2_roof ? w.bytes / l2_bw : l2_level ? footprint / copy_bw : w.bytes / copy_bw;
  const double t_math = w.flops / peak;
  // The math side runs on the pipe the hot loop uses, whatever the declared type's roof: tensor cores when it
  // holds tensor instructions (a memory-bound kernel declared FP32 may do its few FLOPs there: Lab 06's decode),
  // else the CUDA cores at the FP32 rate (or half2's, where declared), even for a type the tensor cores have (a
  // student's FP16 GEMM on FMAs is held to what FMAs can do, not to the tensor peak).
  const bool tensor = h.hmma > 0 && w.dtype != DType::fp16_nontensor;
  const bool tensor_type = w.dtype != DType::fp32 && w.dtype != DType::fp16_nontensor && w.dtype != DType::fp64;
  const double code_peak =
      tensor ? (tensor_type ? peak : peak_flops(gpu, DType::fp16).value_or(peak))
             : (tensor_type ? gpu.fp32_tflops * 1e12 : peak);  // the pipe's rate for the math side
  const double t_math_code = w.flops / code_peak;
  const bool memory = t_mem >= t_math;
  const double threads = static_cast<double>(w.blocks_per_sm) * w.block;
  const double warps = threads / 32;
  if (code.from == "SASS") {
    p.evidence.push_back(fmt::format("code: {} (SASS lines {}-{} of nvdisasm's listing: the code that runs)", code.why_hot,
                                     h.first_line, h.last_line));
  } else {
    p.evidence.push_back(fmt::format("code: {} (PTX lines {}-{}; PTX, not SASS: ptxas may still reorder{})", code.why_hot,
                                     h.first_line, h.last_line, code.from_note.empty() ? "" : "; " + code.from_note));
  }
  p.evidence.insert(p.evidence.end(), beside.begin(), beside.end());
  if (h.remainder) p.evidence.push_back("  this is the remainder loop of an unrolled loop: one trip's loads at a time");
  for (std::size_t i = 0; i < code.loops.size(); ++i) {
    const Trip& t = code.loops[i];
    if (t.remainder && t.remainder_of == code.hot) {
      p.evidence.push_back(fmt::format("  lines {}-{} are its remainder loop ({:g} B of loads before the first use per trip): "
                                       "it runs when fewer trips are left than the unroll",
                                       t.first_line, t.last_line, t.load_bytes_before_use));
    }
  }
  p.evidence.push_back(fmt::format(
      "per trip and thread: {} instructions, {} global loads ({:g} B, {:g} B before the first use), {} stores ({:g} B)"
      "{}{}{}{}{}",
      h.instructions, h.global_loads, h.load_bytes, h.load_bytes_before_use, h.global_stores, h.store_bytes,
      h.cp_async_bytes > 0 ? fmt::format(", cp.async {:g} B", h.cp_async_bytes) : "",
      h.ffma > 0 ? fmt::format(", {} FFMA", h.ffma) : "", h.mufu > 0 ? fmt::format(", {} MUFU", h.mufu) : "",
      h.shared_wavefronts > 0 ? fmt::format(", {:g} shared wavefronts", h.shared_wavefronts) : "",
      h.hmma > 0 ? fmt::format(", {:g} HMMA.16816", h.hmma) : ""));
  if (!code.trips.trips_why.empty()) p.evidence.push_back("trips: " + code.trips.trips_why);
  // The waves of the grid: each is predicted at its own fill. `share` of the grid's blocks run in waves of
  // `blocks` blocks per SM on average over all SMs, with a block on `active` of the SMs.
  struct Wave {
    double share;
    double blocks;
    double active;
  };
  const double slots = sms * w.blocks_per_sm;
  const bool grid_known = w.grid > 0 && slots > 0;
  std::vector<Wave> waves;
  double full_waves = 1, tail_blocks = 0;
  if (w.grid > 0 && slots > 0) {
    const double grid = static_cast<double>(w.grid);
    full_waves = std::floor(grid / slots);
    tail_blocks = grid - full_waves * slots;
    if (full_waves > 0) waves.push_back({full_waves * slots / grid, static_cast<double>(w.blocks_per_sm), 1});
    if (tail_blocks > 0) waves.push_back({tail_blocks / grid, tail_blocks / sms, std::min(1.0, tail_blocks / sms)});
    p.evidence.push_back(fmt::format(
        "residency: {} blocks of {} threads per SM = {:g} warps (occupancy); grid: {} blocks = {:.2f} waves of {:g} "
        "({}){}",
        w.blocks_per_sm, w.block, warps, w.grid, grid / slots, slots, w.grid_from,
        tail_blocks == 0 ? ""
        : full_waves > 0 ? fmt::format(": {:g} full, then {:g} blocks on {:.0f}% of the SMs", full_waves, tail_blocks,
                                       100 * std::min(1.0, tail_blocks / sms))
                         : fmt::format(": one partial wave, {:g} blocks on {:.0f}% of the SMs", tail_blocks,
                                       100 * std::min(1.0, tail_blocks / sms))));
  } else {
    waves.push_back({1, static_cast<double>(w.blocks_per_sm), 1});
    p.evidence.push_back(fmt::format("residency: {} blocks of {} threads per SM = {:g} warps (occupancy; the grid is "
                                     "assumed to fill every SM{})",
                                     w.blocks_per_sm, w.block, warps, w.grid_from.empty() ? "" : ": " + w.grid_from));
  }
  if (w.bytes > 0) {
    p.evidence.push_back(
        w.copy_ceiling_gbps
            ? fmt::format("memory roof: {:.0f} GB/s, the copy ceiling calibrate measured on this GPU", copy_bw / 1e9)
            : fmt::format("memory roof: {:.0f} GB/s, the datasheet's {:g} GB/s x {:.2f} (the copy ceiling's share of it "
                          "on the H100 run; `rooflab calibrate` measures this GPU's)",
                          copy_bw / 1e9, gpu.bandwidth_gbps, c.copy_fraction));
    if (l2_level) {
      p.evidence.push_back(fmt::format(
          "rereads: the declared {} are {:.1f}x the {} the launch's arrays hold: the L2 serves the rereads; DRAM moves "
          "the arrays at least once ({} at the copy ceiling) and the L2 every declared byte ({} at {:.0f} GB/s, its "
          "{:g} B per clock x {:.0f} MHz x {:.2f}, the copy ceiling's share of DRAM's rate; data/perf_model.json): the "
          "slower, {}, is the memory roof",
          bytes_text(w.bytes), w.bytes / footprint, bytes_text(footprint), time_text(footprint / copy_bw),
          time_text(w.bytes / l2_bw), l2_bw / 1e9, c.l2_bytes_per_clock, clock / 1e6, copy_share,
          l2_roof ? "the L2's" : "DRAM's"));
    } else if (rereads) {
      p.evidence.push_back(fmt::format(
          "rereads: the declared {} are {:.1f}x the {} the launch's arrays hold: on a GPU the L2 serves most "
          "rereads, so DRAM moves between {} ({} at the roof) and all of it ({}); the model has no L2 rate for {} "
          "and reads every declared byte at DRAM's rate, so a limit on the memory side is the slow end",
          bytes_text(w.bytes), w.bytes / footprint, bytes_text(footprint), bytes_text(footprint),
          time_text(footprint / copy_bw), time_text(w.bytes / copy_bw), c.arch));
    }
  }

  // Two sides, each the slowest of its measures: moving the declared bytes (loads in flight, issue, special
  // pipes per byte) and doing the declared math (the math pipe against issue, shared memory, MUFU, the
  // instruction class, occupancy). The kernel takes the longer of the two.
  auto slowest = [](const std::vector<Limit>& limits, Limit fallback) {
    for (const auto& l : limits) {
      if (l.fraction < fallback.fraction) fallback = l;
    }
    return fallback;
  };
  // The memory roof: the copy ceiling, or the L2's rate where rereads the L2 serves take longer than DRAM's once.
  const std::string roof_name = l2_roof ? "L2 roof" : "copy ceiling";
  const Limit at_roof{l2_roof ? "L2 bandwidth" : "DRAM bandwidth", 1, "at the roof"};
  Limit mem = at_roof;
  double t_mem_pred = 0;
  double t_mem_steady = 0;  // were every SM full for the whole run (the limiter's share of the time)
  if (w.bytes > 0) {
    // Bytes in flight are held against DRAM's curve (b_sm, the copy ceiling per SM): the L2 answers in a fraction
    // of DRAM's loaded latency, so at its higher rate it needs about the bytes in flight DRAM does (argued, not
    // measured). Issue slots and pipes per byte are held against the rate the roof moves bytes at (b_roof).
    const double b_sm = copy_bw / sms;
    const double b_roof = (t_mem > 0 ? w.bytes / t_mem : copy_bw) / sms;
    // The loop that moves the kernel's bytes: the hot loop, unless the bytes move outside it (an FMA kernel's
    // loop touches no memory; its one load and store are the memory side).
    const Trip& m = code.mover >= 0 && moved(h) == 0 ? code.loops.at(static_cast<std::size_t>(code.mover)) : h;
    // Loads of data the loop rereads (a bias vector, a GEMV's x) come from L1 or L2: no DRAM bytes in flight,
    // and not among the DRAM bytes a trip moves.
    const std::set<int> reused = reused_params(w, m, gpu, c, &p.evidence);
    const double from_caches = cached_bytes(m, reused, w.reach, true);
    // cp.async copies stay in flight until the trip that waits for them: `ahead` trips' worth at once.
    double per_thread = m.load_bytes_before_use - from_caches + m.cp_async_in_flight();
    if (from_caches > 0) {
      p.evidence.push_back(fmt::format("  so {:g} of the {:g} B a thread loads before the first use are DRAM bytes in "
                                       "flight",
                                       m.load_bytes_before_use - from_caches, m.load_bytes_before_use));
      // None of them: the loop's first uses are of cached data, and its DRAM loads come after them. A software-
      // pipelined loop issues the next trip's loads there (nothing later in this trip reads them): those are in
      // flight across the trip's end. Without such loads, the first DRAM load is the least a thread waiting for
      // one has in flight.
      if (per_thread <= m.cp_async_in_flight()) {
        double next_trip = 0, first = 0;
        for (const auto& l : m.loads) {
          if (cached(l, reused, w.reach)) continue;
          if (first == 0) first = l.bytes;
          if (l.for_next_trip) next_trip += l.bytes;
        }
        const double dram = next_trip > 0 ? next_trip : first;
        if (dram > 0) {
          per_thread += dram;
          p.evidence.push_back(fmt::format("  none before the first use: {:g} B {}", dram,
                                           next_trip > 0 ? "of loads for the next trip (nothing later in this trip reads "
                                                           "them) are in flight across the trip's end"
                                                         : "(its first DRAM load) are the least a waiting thread has in "
                                                           "flight"));
        }
      }
    }
    const double dram_trip = dram_bytes_of(h, w, gpu, c);
    const double warp_bytes = 32 * (dram_trip + with.reread);
    // A pass's second read from DRAM (with_passes): DRAM moves that much more than the declared bytes.
    const double t_moved = dram_trip > 0 ? t_mem * (dram_trip + with.reread) / dram_trip : t_mem;
    // The slowest measure of one wave: a block on `active` of the SMs, `resident` threads on each of those. Each
    // active SM has its own loads in flight (Little's law against its share of the bandwidth); to reach the roof
    // each would move the bytes of 1 / active SMs, so its issue slots and special pipes carry that much more.
    auto wave_limit = [&](double resident, double active, bool say) {
      std::vector<Limit> limits;
      const double in_flight = resident * per_thread;
      const double f_mlp = active * in_flight_fraction(in_flight, b_sm, c);
      if (say) {
        p.evidence.push_back(fmt::format(
            "loads in flight: {} per SM ({:g} B x {:g} threads) against a knee of {} ({:.1f} GB/s per SM x {:g} ns): "
            "{:.0f}% of the copy ceiling",
            kb(in_flight), per_thread, resident, kb(c.knee_latency_ns * 1e-9 * b_sm), b_sm / 1e9, c.knee_latency_ns,
            100 * f_mlp));
      }
      // A loop that only stores (a fill) has no loads to wait for: stores do not hold a thread up.
      if (in_flight > 0) {
        limits.push_back({"loads in flight", f_mlp,
                          "issue more independent loads per thread before the first use (unroll the loop, wider loads)"});
      }
      if (memory && warp_bytes > 0) {
        const double trips_per_s = b_roof / active / warp_bytes;  // warp trips per active SM per second at the roof
        const double issue = trips_per_s * h.instructions / (c.issue_per_clock * clock);
        if (say) {
          p.evidence.push_back(fmt::format(
              "issue: {} instructions per {:g} B a warp moves: {:.0f}% of the issue slots at the {} (a "
              "memory-bound loop sustains about {:.0f}%)",
              h.instructions, warp_bytes, 100 * issue, roof_name, 100 * c.issue_efficiency));
        }
        limits.push_back({"issue slots", issue > c.issue_efficiency ? c.issue_efficiency / issue : 1,
                          "fewer instructions per byte: wider loads, less index and branch code"});
        const double special = h.mufu + h.conversions;
        if (special > 0) {
          const double mufu = trips_per_s * special / (c.mufu_per_clock * clock);
          if (say) {
            p.evidence.push_back(fmt::format("special functions and conversions: {} per trip: {:.0f}% of the MUFU pipe "
                                             "at the {}",
                                             special, 100 * mufu, roof_name));
          }
          limits.push_back({"MUFU and conversions", mufu > 1 ? 1 / mufu : 1,
                            "fewer exponentials and conversions per element (packed half2 math, one exp per element)"});
        }
        if (h.shared_wavefronts > 0) {
          const double smem = trips_per_s * h.shared_wavefronts / (c.shared_wavefronts_per_clock * clock);
          if (say) {
            p.evidence.push_back(fmt::format("shared memory: {:g} wavefronts per trip: {:.0f}% of its bandwidth at the "
                                             "{}",
                                             h.shared_wavefronts, 100 * smem, roof_name));
          }
          limits.push_back({"shared memory", smem > 1 ? 1 / smem : 1, "fewer shared-memory round trips per byte"});
        }
      }
      return slowest(limits, at_roof);
    };
    mem = wave_limit(threads, 1, true);
    t_mem_steady = t_moved / std::max(mem.fraction, 1e-3);
    for (const Wave& v : waves) {
      const bool partial = v.blocks < w.blocks_per_sm;
      const double per_active = v.blocks / v.active;  // blocks on each SM that has one
      const Limit l = partial ? wave_limit(per_active * w.block, v.active, false) : mem;
      if (partial) {
        p.evidence.push_back(fmt::format("{}: {:.0f}% of the blocks, {:.2f} per SM on {:.0f}% of the SMs ({} of loads "
                                         "in flight on each): {:.0f}% of the {}, limited by {}",
                                         v.share < 1 ? "the last wave" : "the one wave", 100 * v.share, per_active,
                                         100 * v.active, kb(per_active * w.block * per_thread), 100 * l.fraction,
                                         roof_name, l.name));
      }
      t_mem_pred += t_moved * v.share / std::max(l.fraction, 1e-3);
    }
    if (t_moved > t_mem * 1.02 && t_moved / t_mem > 1 / std::max(mem.fraction, 1e-3)) {
      mem = {"second read from DRAM", t_mem / t_mem_steady,
             "read the input once: keep what the second pass needs in registers or shared memory (one pass, the "
             "online max and sum)"};
    }
    if (t_mem_pred > t_mem_steady * 1.02 && t_mem_pred / t_mem_steady > 1 / std::max(mem.fraction, 1e-3)) {
      mem = {fmt::format("grid ({:.2f} waves)", w.grid / slots), t_mem / t_mem_pred,
             "launch enough blocks to fill every SM several times over (smaller blocks, more rows or tiles per grid, "
             "split the reduction)"};
    }
  }
  const Limit chain{"round trips one after another", 0,
                    "load every piece a thread stages before storing any (a compile-time trip count the compiler "
                    "unrolls, cp.async copies), so that its loads wait together"};
  const Limit at_math_roof{"math pipe", 1, "at the roof"};
  Limit math = at_math_roof;
  double t_math_pred = 0;
  const double fma = w.dtype == DType::fp16_nontensor ? h.hfma2 : h.ffma;
  if (w.flops > 0 && (tensor || fma > 0)) {
    std::vector<Limit> limits;
    const double lanes = code_peak / (2 * sms * clock);  // FMA lanes per SM per clock at the pipe's peak
    double math_cycles = 0;                              // per trip and SM, at the pipe's rate
    if (tensor) {
      const double rate = c.hmma_per_clock > 0 ? c.hmma_per_clock : 1;
      math_cycles = warps * h.hmma / rate;
      if (!tensor_type) {
        p.evidence.push_back("math: the hot loop does the declared FLOPs on the tensor cores: the math side runs at the "
                             "dense FP16 tensor rate");
      }
      p.evidence.push_back(fmt::format("math: {:g} HMMA.16816 per trip at {:.2f} per SM per clock = {:.0f} cycles per "
                                       "trip per SM",
                                       h.hmma, rate, math_cycles));
      if (c.mma_sync_ceiling < 1) {
        p.evidence.push_back(fmt::format("instruction class: mma.sync / WMMA reach about {:.0f}% of the dense tensor peak "
                                         "on {} (data/perf_model.json)",
                                         100 * c.mma_sync_ceiling, c.arch));
        limits.push_back({"tensor instruction class", c.mma_sync_ceiling,
                          "mma.sync and WMMA cannot reach this GPU's dense peak (it needs wgmma)"});
      }
    } else {
      const double rate = lanes / 32;
      if (tensor_type) {
        p.evidence.push_back(fmt::format("math: no tensor instructions in the hot loop: its FMAs run at the FP32 rate "
                                         "({:.1f} TFLOP/s), not at the tensor peak of the declared type",
                                         code_peak / 1e12));
      }
      math_cycles = warps * fma / rate;
      p.evidence.push_back(fmt::format("math: {:g} FMA per trip at {:.0f} warp FMAs per SM per clock = {:.0f} cycles per "
                                       "trip per SM",
                                       fma, rate, math_cycles));
    }
    const double issue_cycles = warps * h.instructions / c.issue_per_clock;
    const double smem_cycles = warps * h.shared_wavefronts / c.shared_wavefronts_per_clock;
    const double mufu_cycles = warps * (h.mufu + h.conversions) / c.mufu_per_clock;
    p.evidence.push_back(fmt::format("issue: {} instructions per trip = {:.0f} cycles ({:.1f} per math instruction)",
                                     h.instructions, issue_cycles, h.instructions / (tensor ? h.hmma : fma)));
    limits.push_back({"issue slots", std::min(1.0, math_cycles / issue_cycles),
                      tensor ? "fewer instructions per tensor instruction: keep fragments in registers (mma.sync, "
                               "ldmatrix), larger warp tiles"
                             : "more FMAs per instruction: a larger register tile per thread, wider shared loads"});
    if (smem_cycles > 0) {
      p.evidence.push_back(fmt::format("shared memory: {:g} wavefronts per trip = {:.0f} cycles", h.shared_wavefronts,
                                       smem_cycles));
      limits.push_back({"shared memory", std::min(1.0, math_cycles / smem_cycles),
                        tensor ? "feed more tensor instructions from each fragment a warp loads (a larger warp tile: 64 "
                                 "x 64 loads one wavefront of fragments per HMMA.16816, 64 x 32 one and a half), and "
                                 "remove bank conflicts (padded or swizzled rows)"
                               : "reuse each shared-memory load for more math (register tiles, 128-bit shared loads)"});
    }
    if (mufu_cycles > 0) {
      p.evidence.push_back(fmt::format("MUFU and conversions: {} per trip = {:.0f} cycles", h.mufu + h.conversions,
                                       mufu_cycles));
      limits.push_back({"MUFU and conversions", std::min(1.0, math_cycles / mufu_cycles),
                        "fewer exponentials and conversions per math instruction"});
    }
    math = slowest(limits, math);
    // Rounds of trips: in each, every block on an SM runs one trip of the loop. Its pipes need `busy` per block
    // trip; with a barrier after the loads, a block's trip also waits for its tiles' load latency, which the other
    // blocks on the SM can cover with their own trips: a round takes max(b x busy, busy + latency) for b blocks
    // (one block per SM: every trip pays the latency). Each wave takes as long as its busiest SM: a last wave of
    // fewer blocks than the SMs hold still takes its busiest SM's rounds. Against the pipes' time (every SM full
    // for the whole run, the rounds b x busy), the waves and the latency each cost a factor.
    const bool waits = h.barriers > 0 && (h.global_loads > 0 || h.cp_async_bytes > 0);
    const double busy = std::max({math_cycles / (tensor ? c.mma_sync_ceiling : 1.0), issue_cycles, smem_cycles}) /
                        clock / std::max(w.blocks_per_sm, 1);
    // Loads the trip waits for one after another before its barrier (count_trips) each cost a loaded latency.
    const int ahead = h.copies_ahead();
    const double serial = ahead == 0 ? std::max(1.0, code.trips.round_trips) : 1;
    const double latency = waits ? serial * c.barrier_latency_ns * 1e-9 : 0;
    const double bps = std::max(w.blocks_per_sm, 1);
    const double waves_of_work = grid_known ? static_cast<double>(w.grid) / slots : 1;
    const double tail_per_sm = grid_known && tail_blocks > 0 ? std::ceil(tail_blocks / sms) : 0;
    // Copies a trip issues with cp.async for a later trip (a ring of stages) land while the trips between run: a
    // block whose copies go out `ahead` trips before they are waited for needs a trip to last lat / ahead at least,
    // whatever else runs, and its b x busy with b blocks sharing the SM (with none ahead, a trip is its work and
    // then the wait).
    auto rounds = [&](double lat) {  // the run's time in units of busy
      const auto round = [&](double b) {
        return ahead > 0 ? std::max(b * busy, lat / ahead) : std::max(b * busy, busy + lat);
      };
      return ((grid_known ? full_waves : 1) * round(bps) + (tail_per_sm > 0 ? round(tail_per_sm) : 0)) / busy;
    };
    const double ideal = waves_of_work * bps;  // rounds x blocks if every SM were full for the whole run
    // (No resident warp, so no work per trip: a caller's occupancy of zero. Neither factor then applies.)
    const double loss = 1 / std::max(math.fraction, 1e-3);
    const double wave_factor = busy > 0 ? rounds(0) / ideal : 1;  // the last wave's idle SMs
    // The load latency no block covers. With the grid and the hot loop's trips known (count_trips), each of a block's
    // trips waits it in every round of the run: a time of its own beside the work, whatever the work is; without
    // them, in proportion to the work.
    const double trips = code.trips.hot_trips;
    double wait_factor = 1;
    if (busy > 0 && grid_known && trips > 0) {
      wait_factor = 1 + (rounds(latency) - rounds(0)) * busy * trips / (t_math_code * loss * wave_factor);
    } else if (busy > 0) {
      wait_factor = rounds(latency) / rounds(0);
    }
    if (wave_factor > 1.0001) {
      p.evidence.push_back(fmt::format("waves: the math of {:.2f} waves takes the time of {:.2f} full ones (the "
                                       "last wave's busiest SM sets its time): x{:.2f}",
                                       waves_of_work, wave_factor * waves_of_work, wave_factor));
    }
    if (ahead > 0 && waits) {
      p.evidence.push_back(fmt::format("cp.async: each trip's copies are waited for {} trip{} later ({} wait lets {} "
                                       "batch{} stay in flight, {} the trip's copies): {:.0f} ns of load latency "
                                       "spread over {} trip{} of work",
                                       ahead, ahead == 1 ? "" : "s", code.from == "SASS" ? "DEPBAR.LE" : "its",
                                       h.async_wait, h.async_wait == 1 ? "" : "es",
                                       h.async_wait_before_copies ? "before" : "after", c.barrier_latency_ns, ahead,
                                       ahead == 1 ? "" : "s"));
    }
    if (wait_factor > 1.0001) {
      p.evidence.push_back(fmt::format(
          "barriers: {:.0f} ns of work per block and trip, {:g} block{} per SM{}, about {:.0f} ns of load latency per "
          "trip{} behind a barrier that the other blocks do not cover{}: x{:.2f}",
          busy * 1e9, bps, bps == 1 ? "" : "s",
          tail_per_sm > 0 && tail_per_sm < bps ? fmt::format(" ({:g} in the last wave)", tail_per_sm) : "",
          latency * 1e9,
          serial > 1 ? fmt::format(" ({:g} round trips one after another, {:g} ns each)", serial, c.barrier_latency_ns)
                     : "",
          ahead > 0 ? fmt::format(", less the {} trip{} of work its copies overlap", ahead,
                                                        ahead == 1 ? "" : "s")
                                          : "",
          wait_factor));
    }
    if (wait_factor > 1.02 && wait_factor >= wave_factor && wait_factor > loss) {
      math = serial > 1 ? chain
             : bps == 1 && (tail_per_sm == 0 || tail_per_sm == 1)
                 ? Limit{"one block per SM", 0,
                         "fit two blocks per SM (__launch_bounds__, fewer registers or less shared memory) or prefetch "
                         "the next tile (cp.async stages)"}
                 : Limit{"load latency behind barriers", 0,
                         ahead > 0 ? "more stages of cp.async copies in flight, or more blocks per SM to cover each "
                                     "other's waits"
                                   : "more blocks per SM to cover each other's waits, or prefetch the next tile "
                                     "(cp.async stages)"};
    } else if (wave_factor > 1.02 && wave_factor > loss) {
      math = {fmt::format("grid ({:.2f} waves)", waves_of_work), 0,
              "launch a grid of whole waves, or many more blocks than the SMs hold at once"};
    }
    t_math_pred = t_math_code * loss * wave_factor * wait_factor;
    math.fraction = t_math / t_math_pred;
  } else if (w.flops > 0 && !memory) {
    p.evidence.push_back("math: the hot loop has none of the kernel's math instructions (is it written yet?)");
  }
  p.roof = memory ? roof_name
                  : (tensor ? fmt::format("dense tensor peak ({:.0f} TFLOP/s)", peak / 1e12)
                            : fmt::format("{} peak ({:.1f} TFLOP/s)", w.dtype == DType::fp16_nontensor ? "FP16x2" : "FP32",
                                          peak / 1e12));
  // Round trips one after another (count_trips, from the PTX run at the timed launch): a trip that loads a piece and
  // uses it before loading the next (a staging loop, an unrolled loop's remainder) waits a loaded latency for each,
  // however many warps share the SM. A thread's run is at least its round trips times that latency, and a slot of an
  // SM runs the grid's waves of blocks one after another. One round trip a trip is what the bytes-in-flight curve
  // already holds (Little's law with the loaded latency); from two on, the waits add up where the curve sees one.
  double t_chain = 0;
  if (code.trips.round_trips >= 2) {
    const double sequential = grid_known ? full_waves + (tail_blocks > 0 ? 1 : 0) : 1;
    const double thread_round_trips = code.trips.round_trips * code.trips.hot_trips;  // over thread 0's run
    t_chain = sequential * thread_round_trips * c.barrier_latency_ns * 1e-9;
    p.evidence.push_back(fmt::format(
        "round trips: {}: {:g} for a thread's run x {:g} ns (the loaded latency) x {:g} block{} one after another on "
        "each slot{} = {}",
        code.trips.round_trips_why, thread_round_trips, c.barrier_latency_ns, sequential,
        sequential == 1 ? "" : "s", grid_known ? "" : " (the grid is not known: one)", time_text(t_chain)));
  }
  p.roof_time_s = std::max(t_mem, t_math);
  p.time_s = std::max({t_mem_pred, t_math_pred, p.roof_time_s, t_chain});
  const Limit& why = t_chain > std::max(t_mem_pred, t_math_pred) ? chain : t_mem_pred >= t_math_pred ? mem : math;
  p.limiter = why.name;
  p.advice = why.advice;
  p.fraction = p.time_s > 0 ? p.roof_time_s / p.time_s : 1;
  // Within 2% of the roof the slowest measure is not what limits the kernel: the roof is (two runs of the same
  // kernels on the H100 agreed within 1%, so 2% is below what a measurement tells apart). The bytes-in-flight curve
  // never reaches 1, and a stream at 99% of the copy ceiling was named "limited by loads in flight".
  if (p.fraction >= 0.98 && &why != &chain) {
    const Limit& roof = memory ? at_roof : at_math_roof;
    p.limiter = roof.name;
    p.advice = roof.advice;
  }
  return p;
}

}  // namespace rooflab::perf
