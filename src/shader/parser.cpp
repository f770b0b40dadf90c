#include "shader/parser.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "bronze/error.hpp"

namespace bronze {
void KernelInfo::check_arity(std::size_t n) const {
  if (n != bound.size())
    throw TypeError("kernel '" + name + "' takes " + std::to_string(bound.size()) + " arguments, got " +
                    std::to_string(n));
}
}  // namespace bronze

namespace bronze::shader {
namespace {

struct Attr {
  const char* name;
  const char* field;
};
const Attr kAttributes[] = {
    {"thread_position_in_grid", "tpig"},
    {"thread_position_in_threadgroup", "tpitg"},
    {"threadgroup_position_in_grid", "tgpig"},
    {"threads_per_threadgroup", "tptg"},
    {"dispatch_threads_per_threadgroup", "dtptg"},
    {"threads_per_grid", "tpg"},
    {"threadgroups_per_grid", "tgpg"},
    {"thread_index_in_threadgroup", "tiitg"},
    {"thread_index_in_simdgroup", "tiisg"},
    {"simdgroup_index_in_threadgroup", "sgiitg"},
    {"threads_per_simdgroup", "tpsg"},
    {"thread_execution_width", "tpsg"},
    {"simdgroups_per_threadgroup", "sgptg"},
};

bool is_collective(const std::string& id) {
  return id == "threadgroup_barrier" || id == "simdgroup_barrier" || id.rfind("simd_", 0) == 0 ||
         id.rfind("quad_", 0) == 0;
}

class Parser {
 public:
  Parser(const std::string& src, const std::string& file) : file_(file) { out_.tokens = lex(src); }

  ParsedSource run() {
    const auto& t = out_.tokens;
    std::size_t i = 0;
    while (i < t.size() && t[i].kind != Token::End) {
      if (t[i].kind == Token::Preproc) {
        for (const Token& x : lex_line(t[i].text))
          if (x.kind == Token::Ident && is_collective(x.text)) all_cooperative_ = true;
        ++i;
      } else if (t[i].text == "template") {
        i = t[i + 1].text == "<" ? template_definition(i) : instantiation(i);
      } else {
        i = declaration(i, {});
      }
    }
    resolve_cooperative();
    return std::move(out_);
  }

 private:
  struct Function {
    std::size_t body_begin = 0, body_end = 0;  // token range inside the braces
    bool collective = false;
    std::set<std::string> callees;
  };
  struct KernelDef {
    std::vector<std::string> tparams;
    std::size_t params_begin = 0, params_end = 0;  // tokens inside the parentheses
    std::size_t body_begin = 0, body_end = 0;
    int line = 0;
  };

  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw ShaderCompileError(file_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) + ": error: " + what,
                             at.line, at.col);
  }

  static std::vector<Token> lex_line(const std::string& s) {
    std::string body = s.substr(1);  // drop '#', so the line lexes as tokens
    return lex(body);
  }

  std::size_t match(std::size_t open, const char* o, const char* c) const {
    const auto& t = out_.tokens;
    int depth = 0;
    for (std::size_t i = open; t[i].kind != Token::End; ++i) {
      if (t[i].text == o) ++depth;
      else if (t[i].text == c && --depth == 0) return i;
    }
    fail(t[open], std::string("no matching '") + c + "'");
  }

  // Skips an attribute group "[[ ... ]]" starting at i; returns the index after it.
  std::size_t skip_attribute(std::size_t i) const { return match(i, "[", "]") + 1; }
  bool attribute_at(std::size_t i) const {
    return out_.tokens[i].text == "[" && out_.tokens[i + 1].text == "[";
  }

  // Token ranges [b, e) between the top-level commas of tokens [begin, end)
  // (nesting in (), [] and <> is skipped); empty ranges are dropped.
  std::vector<std::pair<std::size_t, std::size_t>> split_commas(std::size_t begin, std::size_t end) const {
    const auto& t = out_.tokens;
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t b = begin;
    int depth = 0;
    for (std::size_t k = begin; k <= end; ++k) {
      const std::string& x = k < end ? t[k].text : std::string();
      if (x == "(" || x == "[" || x == "<") ++depth;
      if (x == ")" || x == "]" || x == ">") --depth;
      if (k == end || (x == "," && depth == 0)) {
        if (k > b) out.emplace_back(b, k);
        b = k + 1;
      }
    }
    return out;
  }

  std::size_t template_definition(std::size_t i) {
    const auto& t = out_.tokens;
    std::size_t close = match(i + 1, "<", ">");
    // Each parameter's name: its last top-level identifier before any default.
    std::vector<std::string> tparams;
    for (auto [b, e] : split_commas(i + 2, close)) {
      std::string name;
      int depth = 0;
      for (std::size_t k = b; k < e && t[k].text != "="; ++k) {
        if (t[k].text == "<" || t[k].text == "(") ++depth;
        if (t[k].text == ">" || t[k].text == ")") --depth;
        if (t[k].kind == Token::Ident && depth == 0) name = t[k].text;
      }
      if (!name.empty()) tparams.push_back(name);
    }
    return declaration(close + 1, tparams);
  }

  // A declaration or definition at namespace scope starting at i.
  std::size_t declaration(std::size_t i, const std::vector<std::string>& tparams) {
    const auto& t = out_.tokens;
    bool kernel = false;
    std::size_t start = i;
    std::size_t lparen = 0, rparen = 0;
    while (i < t.size() && t[i].kind != Token::End) {
      const std::string& x = t[i].text;
      if (attribute_at(i)) {
        if (t[i + 2].text == "kernel") kernel = true;
        i = skip_attribute(i);
        continue;
      }
      if (x == "kernel" && t[i].kind == Token::Ident) kernel = true;
      if (x == "(" && !lparen) {
        lparen = i;
        rparen = match(i, "(", ")");
        i = rparen + 1;
        continue;
      }
      if (x == ";") return i + 1;
      if (x == "{") {
        if (!lparen) {
          // namespace: its contents are scanned as top level; struct/enum: skipped.
          for (std::size_t k = start; k < i; ++k)
            if (t[k].text == "namespace") return i + 1;
          return match(i, "{", "}") + 1;
        }
        std::size_t close = match(i, "{", "}");
        std::string name = lparen > 0 && t[lparen - 1].kind == Token::Ident ? t[lparen - 1].text : "";
        Function f;
        f.body_begin = i + 1;
        f.body_end = close;
        for (std::size_t k = i + 1; k < close; ++k) {
          if (t[k].kind != Token::Ident) continue;
          if (is_collective(t[k].text)) f.collective = true;
          if (t[k + 1].text == "(" || t[k + 1].text == "<") f.callees.insert(t[k].text);
        }
        functions_[name] = f;
        if (kernel) {
          KernelDef def{tparams, lparen + 1, rparen, i + 1, close, t[lparen - 1].line};
          if (name.empty()) fail(t[lparen], "kernel without a name");
          if (tparams.empty()) add_kernel(name, name, def, {});
          else templates_[name] = def;
        }
        return close + 1;
      }
      if (x == "}") return i + 1;  // end of a namespace
      ++i;
    }
    return i;
  }

  // template [[host_name("n")]] kernel void f<args>(params);
  std::size_t instantiation(std::size_t i) {
    const auto& t = out_.tokens;
    std::string host;
    std::size_t k = i + 1;
    std::size_t name_at = 0;
    for (; t[k].kind != Token::End && t[k].text != ";"; ++k) {
      if (attribute_at(k)) {
        std::size_t end = skip_attribute(k);
        for (std::size_t a = k + 2; a + 2 < end; ++a)
          if (t[a].text == "host_name" && t[a + 1].text == "(" && t[a + 2].kind == Token::String)
            host = t[a + 2].text.substr(1, t[a + 2].text.size() - 2);
        k = end - 1;
        continue;
      }
      if (!name_at && t[k].kind == Token::Ident && t[k + 1].text == "<" && t[k].text != "template") name_at = k;
    }
    if (t[k].kind == Token::End) return k;  // no ';': the compiler reports it
    std::size_t end = k + 1;
    if (!name_at) return end;  // some other explicit instantiation
    auto it = templates_.find(t[name_at].text);
    if (it == templates_.end()) return end;  // not a kernel template
    std::size_t close = match(name_at + 1, "<", ">");
    std::vector<std::string> args;
    for (auto [b, e] : split_commas(name_at + 2, close)) {
      std::string arg;
      for (std::size_t a = b; a < e; ++a) arg += (arg.empty() ? "" : " ") + t[a].text;
      args.push_back(arg);
    }
    if (args.size() != it->second.tparams.size())
      fail(t[name_at], "instantiation of '" + t[name_at].text + "' has " + std::to_string(args.size()) +
                           " template arguments, the template takes " + std::to_string(it->second.tparams.size()));
    std::map<std::string, std::string> subst;
    std::string call = t[name_at].text + "<";
    for (std::size_t a = 0; a < args.size(); ++a) {
      subst[it->second.tparams[a]] = args[a];
      call += (a ? ", " : "") + args[a];
    }
    call += ">";
    add_kernel(host.empty() ? call : host, call, it->second, subst);
    return end;
  }

  std::string type_text(std::size_t b, std::size_t e, const std::map<std::string, std::string>& subst,
                        const std::set<std::size_t>& skip) const {
    const auto& t = out_.tokens;
    std::string s;
    for (std::size_t k = b; k < e; ++k) {
      if (skip.count(k)) continue;
      std::string x = t[k].text;
      auto it = subst.find(x);
      if (it != subst.end()) x = it->second;
      bool glue = x == "::" || (!s.empty() && s.size() >= 2 && s.compare(s.size() - 2, 2, "::") == 0);
      s += (s.empty() || glue) ? x : " " + x;
    }
    return s;
  }

  void add_kernel(const std::string& host, const std::string& call, const KernelDef& def,
                  const std::map<std::string, std::string>& subst) {
    const auto& t = out_.tokens;
    for (const ParsedKernel& k : out_.kernels)
      if (k.info.name == host) fail(t[def.params_begin], "a kernel named '" + host + "' is defined twice");
    ParsedKernel pk;
    pk.info.name = host;
    pk.info.line = def.line;
    pk.call = call;
    auto ranges = split_commas(def.params_begin, def.params_end);
    if (ranges.size() == 1 && ranges[0].second - ranges[0].first == 1 && t[ranges[0].first].text == "void")
      ranges.clear();
    std::set<int> used_slots;
    for (const auto& range : ranges) {
      const std::size_t pb = range.first, pe = range.second;
      ParsedParam p;
      p.info.line = t[pb].line;
      std::string space;
      bool is_const = false;
      std::vector<std::string> attrs;
      std::set<std::size_t> skip;
      std::size_t name_at = 0, array_at = 0;
      for (std::size_t k = pb; k < pe; ++k) {
        const std::string& x = t[k].text;
        if (attribute_at(k)) {
          std::size_t end = skip_attribute(k);
          std::string a;
          for (std::size_t q = k + 2; q < end - 2; ++q) a += t[q].text;
          attrs.push_back(a);
          for (std::size_t q = k; q < end; ++q) skip.insert(q);
          k = end - 1;
          continue;
        }
        if (x == "device" || x == "constant" || x == "threadgroup" || x == "thread" || x == "threadgroup_imageblock") {
          space = x;
          skip.insert(k);
        } else if (x == "const") {
          is_const = true;
          skip.insert(k);
        } else if (x == "volatile" || x == "restrict" || x == "__restrict") {
          skip.insert(k);
        } else if (x == "*") {
          p.pointer = true;
          skip.insert(k);
        } else if (x == "&") {
          p.reference = true;
          skip.insert(k);
        } else if (x == "[" && !array_at) {
          array_at = k;
          std::size_t end = match(k, "[", "]");
          for (std::size_t q = k; q <= end; ++q) skip.insert(q);
          k = end;
        } else if (t[k].kind == Token::Ident && !array_at) {
          name_at = k;
        }
      }
      if (!name_at) fail(t[pb], "kernel parameters need names");
      skip.insert(name_at);
      p.info.name = t[name_at].text;
      p.info.type = type_text(pb, pe, subst, skip);
      p.span_begin = t[pb].offset;
      p.span_end = t[pe - 1].offset + t[pe - 1].text.size();
      if (p.info.type.empty()) fail(t[pb], "parameter '" + p.info.name + "' has no type");
      if (p.info.type.find("texture") != std::string::npos || p.info.type.find("sampler") != std::string::npos)
        fail(t[pb], "textures and samplers are not supported by bronze (parameter '" + p.info.name + "')");
      p.info.read_only = is_const || space == "constant";
      p.cast_type = (p.info.read_only ? "const " : "") + p.info.type;
      p.def_cast_type = (p.info.read_only ? "const " : "") + type_text(pb, pe, {}, skip);
      std::string attribute;
      int buffer_index = -1, tg_index = -1;
      for (const std::string& a : attrs) {
        auto num = [&](const std::string& prefix) {
          try {
            return std::stoi(a.substr(prefix.size() + 1));
          } catch (...) {
            fail(t[pb], "bad attribute [[" + a + "]]");
          }
        };
        if (a.rfind("buffer(", 0) == 0) buffer_index = num("buffer");
        else if (a.rfind("threadgroup(", 0) == 0) tg_index = num("threadgroup");
        else if (a.rfind("function_constant", 0) == 0)
          fail(t[pb], "function constants are not supported yet");
        else if (attribute_field(a)) attribute = a;
        else if (a.rfind("stage_in", 0) == 0 || a.rfind("texture", 0) == 0 || a.rfind("sampler", 0) == 0)
          fail(t[pb], "[[" + a + "]] is not a compute-kernel parameter bronze supports");
      }
      if (!attribute.empty()) {
        p.info.kind = ParamKind::Attribute;
        p.info.attribute = attribute;
      } else if (tg_index >= 0 || space == "threadgroup") {
        p.info.kind = ParamKind::ThreadgroupBuffer;
        p.info.index = tg_index >= 0 ? tg_index : 0;
        if (p.info.index > 7) fail(t[pb], "threadgroup buffer index over 7");
      } else if (p.pointer && (space == "device" || space == "constant")) {
        p.info.kind = ParamKind::Buffer;
      } else if (p.reference && space == "device") {
        p.info.kind = ParamKind::Buffer;
      } else if (p.reference || array_at || space.empty() || space == "constant") {
        p.info.kind = ParamKind::Scalar;
        if (array_at) p.pointer = true;  // decays to a pointer to the bound bytes
        p.info.by_value = !p.pointer;
      } else {
        fail(t[pb], "unsupported kernel parameter '" + p.info.name + "' (address space " + space + ")");
      }
      if (p.info.kind == ParamKind::Buffer || p.info.kind == ParamKind::Scalar) {
        p.info.index = buffer_index;
        if (buffer_index >= 0 && !used_slots.insert(buffer_index).second)
          fail(t[pb], "buffer index " + std::to_string(buffer_index) + " is used twice");
      }
      pk.params.push_back(std::move(p));
    }
    // Implicit slots follow declaration order over the free indices.
    int next = 0;
    for (ParsedParam& p : pk.params) {
      if ((p.info.kind != ParamKind::Buffer && p.info.kind != ParamKind::Scalar) || p.info.index >= 0) continue;
      while (used_slots.count(next)) ++next;
      p.info.index = next;
      used_slots.insert(next);
    }
    std::vector<ParsedParam*> bound;
    for (ParsedParam& p : pk.params)
      if (p.info.kind == ParamKind::Buffer || p.info.kind == ParamKind::Scalar) bound.push_back(&p);
    std::stable_sort(bound.begin(), bound.end(), [](auto* a, auto* b) { return a->info.index < b->info.index; });
    for (std::size_t k = 0; k < bound.size(); ++k) bound[k]->info.binding = static_cast<int>(k);
    // Buffers indexed directly by the grid position must cover the grid.
    std::string gid;
    for (const ParsedParam& p : pk.params)
      if (p.info.attribute == "thread_position_in_grid" && p.info.type.find_first_of("234") == std::string::npos)
        gid = p.info.name;
    if (!gid.empty())
      for (ParsedParam& p : pk.params)
        if (p.info.kind == ParamKind::Buffer)
          for (std::size_t k = def.body_begin; k + 3 < def.body_end; ++k)
            if (t[k].text == p.info.name && t[k + 1].text == "[" && t[k + 2].text == gid && t[k + 3].text == "]")
              p.info.indexed_by_grid = true;
    for (const ParsedParam& p : pk.params) pk.info.params.push_back(p.info);
    pk.info.bound.resize(bound.size());
    for (std::size_t k = 0; k < pk.info.params.size(); ++k)
      if (pk.info.params[k].binding >= 0) pk.info.bound[pk.info.params[k].binding] = static_cast<int>(k);
    pk.threadgroup_sizes = threadgroup_sizes(def, subst);
    kernel_function_.push_back(t[def.params_begin - 2].text);
    out_.kernels.push_back(std::move(pk));
  }

  // "sizeof(T) * (N) * (M)" for each `threadgroup T name[N][M];` in the body.
  std::vector<std::string> threadgroup_sizes(const KernelDef& def, const std::map<std::string, std::string>& subst) const {
    const auto& t = out_.tokens;
    std::vector<std::string> out;
    for (std::size_t k = def.body_begin; k < def.body_end; ++k) {
      if (t[k].text != "threadgroup") continue;
      std::size_t e = k + 1;
      while (e < def.body_end && t[e].text != ";" && t[e].text != "[" && t[e].text != "*" && t[e].text != "&" &&
             t[e].text != "=" && t[e].text != "(")
        ++e;
      if (e >= def.body_end || t[e].text == "*" || t[e].text == "&" || t[e].text == "(" || e - k < 3) continue;
      std::string expr = "sizeof(" + type_text(k + 1, e - 1, subst, {}) + ")";
      while (t[e].text == "[") {
        std::size_t close = match(e, "[", "]");
        expr += " * (" + type_text(e + 1, close, subst, {}) + ")";
        e = close + 1;
      }
      out.push_back(expr);
    }
    return out;
  }

  void resolve_cooperative() {
    std::set<std::string> coop;
    for (auto& [name, f] : functions_)
      if (f.collective) coop.insert(name);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [name, f] : functions_) {
        if (coop.count(name)) continue;
        for (const std::string& c : f.callees)
          if (coop.count(c)) {
            coop.insert(name);
            changed = true;
            break;
          }
      }
    }
    for (std::size_t i = 0; i < out_.kernels.size(); ++i)
      out_.kernels[i].info.cooperative = all_cooperative_ || coop.count(kernel_function_[i]) > 0;
  }

  std::string file_;
  ParsedSource out_;
  std::map<std::string, Function> functions_;
  std::map<std::string, KernelDef> templates_;
  std::vector<std::string> kernel_function_;
  bool all_cooperative_ = false;
};

}  // namespace

const char* attribute_field(const std::string& attribute) {
  for (const Attr& a : kAttributes)
    if (attribute == a.name) return a.field;
  return nullptr;
}

ParsedSource parse(const std::string& source, const std::string& filename) {
  return Parser(source, filename).run();
}

}  // namespace bronze::shader
