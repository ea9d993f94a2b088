#include "core/grammar/random_schema_test_util.h"

#include <algorithm>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar_matcher.h"

namespace tandem::testing {
namespace {

using json::Array;
using json::Object;
using json::Value;

// Strings that match each pattern (whole string).
struct PatternSamples {
  const char* pattern;
  std::vector<const char*> samples;
};
const std::vector<PatternSamples>& Patterns() {
  static const auto* patterns = new std::vector<PatternSamples>{
      {"^[a-z]{3,5}$", {"abc", "hello"}},
      {"^\\d{3}-\\d{4}$", {"555-1234", "000-0000"}},
      {"ab", {"xaby", "ab", "\"ab\""}},
      {"^(yes|no)$", {"yes", "no"}},
      {"^[A-Z][a-z]*$", {"Hello", "X"}},
      {"^\"q\\\\\"$", {"\"q\\\""}},
  };
  return *patterns;
}

// Patterns of finite languages (RandomSchemaOptions::bounded).
const std::vector<PatternSamples>& BoundedPatterns() {
  static const auto* patterns = new std::vector<PatternSamples>{
      {"^[a-z]{3,5}$", {"abc", "hello"}},
      {"^\\d{3}-\\d{4}$", {"555-1234", "000-0000"}},
      {"^(yes|no)$", {"yes", "no"}},
      {"^[A-Z][a-z]{0,4}$", {"Hello", "X"}},
      {"^\"q\\\\\"$", {"\"q\\\""}},
      {"^(ab|c){1,3}x?$", {"ab", "cabx", "abcab"}},
  };
  return *patterns;
}

// Formats of finite languages (RandomSchemaOptions::bounded).
constexpr const char* kBoundedFormats[] = {"date", "uuid"};

const std::vector<std::pair<const char*, std::vector<const char*>>>& Formats() {
  static const auto* formats = new std::vector<std::pair<const char*, std::vector<const char*>>>{
      {"date", {"2024-02-29", "1999-12-31", "2000-01-01"}},
      {"time", {"12:34:56Z", "23:59:59.5+05:30", "00:00:00-01:00"}},
      {"date-time", {"2024-01-01T00:00:00Z", "1970-12-31T23:59:59.999+14:00"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"}},
      {"email", {"a.b@example.com", "x+y@sub.example.org"}},
  };
  return *formats;
}

constexpr const char* kAlphabet[] = {"a", "b", "Z", "0", " ", "\"", "\\", "\n", "/",
                                     "\xC3\xA9", "\xF0\x9F\x98\x80", "\t", "\x01"};
constexpr const char* kNames[] = {"id", "name", "a", "ab", "b c", "\xC3\xA9", "x/y", "tags", "n"};

class Random {
 public:
  explicit Random(uint32_t seed) : engine_(seed) {}
  // Uniform in [lo, hi], by rejection-free modulo (tests only need determinism).
  int Int(int lo, int hi) { return lo + static_cast<int>(engine_() % (hi - lo + 1)); }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(0, static_cast<int>(v.size()) - 1)]; }

 private:
  std::mt19937 engine_;
};

class SchemaMaker {
 public:
  SchemaMaker(uint32_t seed, const RandomSchemaOptions& options)
      : random_(seed), options_(options) {}

  Value Root() {
    Object defs;
    if (random_.Chance(40)) {
      defs.Set("leaf", Make(options_.max_depth - 1));
      def_names_.push_back("leaf");
    }
    if (random_.Chance(30)) {
      Object value{{"type", "integer"}};
      if (options_.bounded) {
        value.Set("minimum", -9);
        value.Set("maximum", 99);
      }
      defs.Set("tree", Object{{"type", "object"},
                              {"properties", Object{{"value", std::move(value)},
                                                    {"children", Object{{"type", "array"},
                                                                        {"items", Object{{"$ref", "#/$defs/tree"}}},
                                                                        {"maxItems", options_.bounded ? 1 : 2}}}}},
                              {"required", Array{"value"}},
                              {"additionalProperties", false}});
      def_names_.push_back("tree");
    }
    Value root = Make(0);
    if (!defs.empty()) {
      if (!root.is_object()) root = Object{};
      root.as_object().Set("$defs", std::move(defs));
    }
    return root;
  }

 private:
  Value Make(int depth) {
    const bool leaf = depth >= options_.max_depth;
    const int kind = random_.Int(0, leaf ? 9 : 16);
    Value schema = MakeKind(kind, depth);
    if (schema.is_object() && random_.Chance(15)) {
      schema.as_object().Set("description", "a random schema");
    }
    return schema;
  }

  Value MakeKind(int kind, int depth) {
    switch (kind) {
      case 0: return StringSchema();
      case 1: return IntegerSchema();
      case 2: return NumberSchema();
      case 3: return Object{{"type", random_.Chance(50) ? "boolean" : "null"}};
      case 4: return EnumSchema();
      case 5: return Object{{"const", EnumValue()}};
      case 6: return Object{{"type", Array{"string", "null"}}, {"maxLength", random_.Int(0, 4)}};
      case 7:
        if (options_.bounded) return Object{{"type", random_.Chance(50) ? "boolean" : "null"}};
        return random_.Chance(50) ? Value(true) : Value(Object{});
      case 8: return StringSchema();
      case 9:
        if (!def_names_.empty()) return Object{{"$ref", "#/$defs/" + random_.Pick(def_names_)}};
        return IntegerSchema();
      case 10: case 11: return ObjectSchema(depth);
      case 12: case 13: return ArraySchema(depth);
      case 14: return Object{{"anyOf", Array{Make(depth + 1), Make(depth + 1)}}};
      case 15: return OneOfSchema(depth);
      default: return Object{{"allOf", Array{Make(depth + 1)}}};
    }
  }

  Value StringSchema() {
    Object s{{"type", "string"}};
    const int variant = random_.Int(0, 3);
    if (variant == 1 && options_.bounded) {
      s.Set("format", kBoundedFormats[random_.Int(0, 1)]);
    } else if (variant == 1) {
      s.Set("format", random_.Pick(Formats()).first);
    } else if (variant == 2 && options_.patterns) {
      s.Set("pattern", random_.Pick(options_.bounded ? BoundedPatterns() : Patterns()).pattern);
    } else if (variant == 3 || options_.bounded) {
      const int lo = random_.Int(0, 3);
      if (random_.Chance(70)) s.Set("minLength", lo);
      s.Set("maxLength", lo + random_.Int(0, 4));
    }
    return s;
  }

  Value IntegerSchema() {
    Object s{{"type", "integer"}};
    const int lo = random_.Int(-100, 100), hi = lo + random_.Int(2, 1000);
    SetBounds(s, lo, hi);
    return s;
  }

  Value NumberSchema() {
    Object s{{"type", "number"}};
    const int lo = random_.Int(-20, 20), hi = lo + random_.Int(1, 50);
    SetBounds(s, lo, hi);
    return s;
  }

  // Each bound with even odds (both when bounded), inclusive or exclusive with even odds.
  void SetBounds(Object& s, int lo, int hi) {
    if (random_.Chance(50) || options_.bounded) {
      s.Set(random_.Chance(50) ? "minimum" : "exclusiveMinimum", lo);
    }
    if (random_.Chance(50) || options_.bounded) {
      s.Set(random_.Chance(50) ? "maximum" : "exclusiveMaximum", hi);
    }
  }

  Value EnumValue() {
    switch (random_.Int(0, 6)) {
      case 0: return Value(random_.Int(-5, 5));
      case 1: return Value(nullptr);
      case 2: return Value(true);
      case 3: return Value(2.5);
      case 4: return Value(Array{1, "x"});
      case 5: return Value(Object{{"k", "v"}});
      default: return Value(absl::StrCat("v", random_.Int(0, 9), kAlphabet[random_.Int(0, 12)]));
    }
  }

  Value EnumSchema() {
    Array values;
    for (int i = random_.Int(1, 4); i > 0; --i) values.push_back(EnumValue());
    return Object{{"enum", std::move(values)}};
  }

  Value ObjectSchema(int depth) {
    Object properties;
    Array required;
    for (int i = random_.Int(0, 4); i > 0; --i) {
      const char* name = kNames[random_.Int(0, 8)];
      if (properties.Contains(name)) continue;
      properties.Set(name, random_.Chance(5) ? Value(false) : Make(depth + 1));
      if (!properties.Find(name)->is_bool() && random_.Chance(50)) required.push_back(name);
    }
    Object s{{"type", "object"}, {"properties", std::move(properties)}};
    if (!required.empty()) s.Set("required", std::move(required));
    const int additional = random_.Int(0, 9);
    if (additional < 4 || options_.bounded) {
      s.Set("additionalProperties", false);
    } else if (additional < 5) {
      s.Set("additionalProperties", true);
    } else if (additional < 7) {
      s.Set("additionalProperties", Make(options_.max_depth));
    }
    return s;
  }

  Value ArraySchema(int depth) {
    Object s{{"type", "array"}};
    Array prefix;
    for (int i = random_.Int(0, 2); i > 0 && random_.Chance(50); --i) prefix.push_back(Make(depth + 1));
    const bool items_false = !prefix.empty() && random_.Chance(30);
    const int k = static_cast<int>(prefix.size());
    if (!prefix.empty()) s.Set("prefixItems", std::move(prefix));
    if (items_false) {
      s.Set("items", false);
    } else if (random_.Chance(80) || options_.bounded) {
      s.Set("items", Make(depth + 1));
    }
    const int lo = random_.Int(0, items_false ? k : 3);
    if (random_.Chance(50)) s.Set("minItems", lo);
    if (random_.Chance(50) || options_.bounded) s.Set("maxItems", lo + random_.Int(0, 3));
    return s;
  }

  // Branches of distinct types, or objects told apart by a required const "kind".
  Value OneOfSchema(int depth) {
    Array branches;
    if (random_.Chance(50)) {
      std::vector<int> kinds = {0, 1, 3, 10, 12};  // string, integer, boolean/null, object, array
      for (int i = random_.Int(2, 3); i > 0; --i) {
        const int at = random_.Int(0, static_cast<int>(kinds.size()) - 1);
        branches.push_back(MakeKind(kinds[at], depth + 1));
        kinds.erase(kinds.begin() + at);
      }
      return Object{{"oneOf", std::move(branches)}};
    }
    for (int i = 0, n = random_.Int(2, 3); i < n; ++i) {
      Value branch = ObjectSchema(depth + 1);
      Object& o = branch.as_object();
      Object properties{{"kind", Object{{"const", absl::StrCat("k", i)}}}};
      for (const auto& [name, sub] : o.Find("properties")->as_object()) properties.Set(name, sub);
      o.Set("properties", std::move(properties));
      Array required{"kind"};
      if (const Value* r = o.Find("required")) {
        for (const Value& name : r->as_array()) required.push_back(name);
      }
      o.Set("required", std::move(required));
      branches.push_back(std::move(branch));
    }
    return Object{{"oneOf", std::move(branches)}};
  }

  Random random_;
  RandomSchemaOptions options_;
  std::vector<std::string> def_names_;
};

class InstanceMaker {
 public:
  InstanceMaker(const Value& root, uint32_t seed) : root_(root), random_(seed) {}

  Value Make(const Value& schema, int depth) {
    if (schema.is_bool()) return AnyValue();
    const Object& s = schema.as_object();
    if (const Value* ref = s.Find("$ref")) {
      const std::string name = ref->as_string().substr(std::string("#/$defs/").size());
      return Make(*root_.as_object().Find("$defs")->as_object().Find(name), depth + 1);
    }
    if (const Value* all_of = s.Find("allOf")) return Make(all_of->as_array()[0], depth + 1);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const Value* branches = s.Find(key)) {
        const Array& list = branches->as_array();
        return Make(list[random_.Int(0, static_cast<int>(list.size()) - 1)], depth + 1);
      }
    }
    if (const Value* c = s.Find("const")) return *c;
    if (const Value* e = s.Find("enum")) {
      return e->as_array()[random_.Int(0, static_cast<int>(e->as_array().size()) - 1)];
    }
    const Value* type = s.Find("type");
    if (type == nullptr) return AnyValue();
    std::string name = type->is_string() ? type->as_string()
                                         : type->as_array()[random_.Int(0, 1)].as_string();
    if (name == "string") return StringValue(s);
    if (name == "integer") return IntegerValue(s);
    if (name == "number") return NumberValue(s);
    if (name == "boolean") return Value(random_.Chance(50));
    if (name == "object") return ObjectValue(s, depth);
    if (name == "array") return ArrayValue(s, depth);
    return Value(nullptr);
  }

 private:
  Value AnyValue() {
    switch (random_.Int(0, 5)) {
      case 0: return Value(nullptr);
      case 1: return Value(random_.Int(-9, 9));
      case 2: return Value("s\n\xC3\xA9");
      case 3: return Value(Array{1, Value(false)});
      case 4: return Value(Object{{"k", Array{}}});
      default: return Value(0.25);
    }
  }

  Value StringValue(const Object& s) {
    if (const Value* format = s.Find("format")) {
      for (const auto& [name, samples] : Formats()) {
        if (format->as_string() == name) return Value(random_.Pick(samples));
      }
    }
    if (const Value* pattern = s.Find("pattern")) {
      for (const auto* list : {&Patterns(), &BoundedPatterns()}) {
        for (const PatternSamples& p : *list) {
          if (pattern->as_string() == p.pattern) return Value(random_.Pick(p.samples));
        }
      }
    }
    const int lo = s.Contains("minLength") ? static_cast<int>(s.Find("minLength")->as_int()) : 0;
    const int hi = s.Contains("maxLength") ? static_cast<int>(s.Find("maxLength")->as_int()) : lo + 5;
    std::string out;
    for (int n = random_.Int(lo, hi); n > 0; --n) out += kAlphabet[random_.Int(0, 12)];
    return Value(std::move(out));
  }

  // The integer bounds [lo, hi] of s (open ends: 60 past the other).
  std::pair<int64_t, int64_t> IntegerBounds(const Object& s) {
    int64_t lo = -1000000, hi = 1000000;
    if (const Value* v = s.Find("minimum")) lo = v->as_int();
    if (const Value* v = s.Find("exclusiveMinimum")) lo = v->as_int() + 1;
    if (const Value* v = s.Find("maximum")) hi = v->as_int();
    if (const Value* v = s.Find("exclusiveMaximum")) hi = v->as_int() - 1;
    if (lo == -1000000) lo = hi == 1000000 ? -30 : hi - 60;
    if (hi == 1000000) hi = lo + 60;
    return {lo, hi};
  }

  Value IntegerValue(const Object& s) {
    const auto [lo, hi] = IntegerBounds(s);
    return Value(lo + random_.Int(0, static_cast<int>(hi - lo)));
  }

  Value NumberValue(const Object& s) {
    auto [lo, hi] = IntegerBounds(s);
    // x + 0.5 lies strictly inside [x, x + 1], within any integer bounds around it.
    const bool exclusive_lo = s.Contains("exclusiveMinimum");
    const int64_t half_lo = exclusive_lo ? lo - 1 : lo;
    const int64_t half_hi = s.Contains("exclusiveMaximum") ? hi : hi - 1;
    if (half_lo <= half_hi && random_.Chance(50)) {
      return Value(static_cast<double>(half_lo + random_.Int(0, static_cast<int>(half_hi - half_lo))) + 0.5);
    }
    if (lo > hi) return Value(static_cast<double>(half_lo) + 0.5);
    return Value(lo + random_.Int(0, static_cast<int>(hi - lo)));
  }

  Value ObjectValue(const Object& s, int depth) {
    Object out;
    std::vector<std::string> required;
    if (const Value* r = s.Find("required")) {
      for (const Value& name : r->as_array()) required.push_back(name.as_string());
    }
    const Value* properties = s.Find("properties");
    if (properties != nullptr) {
      for (const auto& [name, sub] : properties->as_object()) {
        const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
        if (sub.is_bool() && !sub.as_bool()) continue;
        if (is_required || (depth < 6 && random_.Chance(50))) out.Set(name, Make(sub, depth + 1));
      }
    }
    const Value* additional = s.Find("additionalProperties");
    if (!(additional != nullptr && additional->is_bool() && !additional->as_bool()) &&
        random_.Chance(30)) {
      for (const char* key : {"extra", "z\"z"}) {
        if (properties != nullptr && properties->as_object().Contains(key)) continue;
        out.Set(key, additional != nullptr ? Make(*additional, depth + 1) : AnyValue());
      }
    }
    return Value(std::move(out));
  }

  Value ArrayValue(const Object& s, int depth) {
    const Value* prefix = s.Find("prefixItems");
    const Value* items = s.Find("items");
    const int k = prefix != nullptr ? static_cast<int>(prefix->as_array().size()) : 0;
    const int lo = s.Contains("minItems") ? static_cast<int>(s.Find("minItems")->as_int()) : 0;
    int hi = s.Contains("maxItems") ? static_cast<int>(s.Find("maxItems")->as_int()) : lo + 3;
    if (items != nullptr && items->is_bool() && !items->as_bool()) hi = std::min(hi, k);
    if (depth >= 6) hi = lo;  // recursion ends
    Array out;
    for (int i = 0, n = random_.Int(lo, std::max(lo, hi)); i < n; ++i) {
      const Value* sub = i < k ? &prefix->as_array()[i] : items;
      out.push_back(sub != nullptr ? Make(*sub, depth + 1) : AnyValue());
    }
    return Value(std::move(out));
  }

  const Value& root_;
  Random random_;
};

}  // namespace

json::Value RandomSchema(uint32_t seed, const RandomSchemaOptions& options) {
  return SchemaMaker(seed, options).Root();
}

json::Value RandomInstance(const json::Value& schema, uint32_t seed) {
  return InstanceMaker(schema, seed).Make(schema, 0);
}

std::optional<std::string> RandomSentence(const Grammar& grammar, uint32_t seed,
                                          size_t soft_max, size_t hard_max) {
  GrammarMatcher matcher(grammar);
  MatcherState state = matcher.Start();
  Random random(seed);
  std::string out;
  // Past soft_max, bytes that close something come first.
  constexpr absl::string_view kClosing = "\"]}";
  while (out.size() < hard_max) {
    const bool can_end = matcher.CanEnd(state);
    if (can_end && (out.size() >= soft_max || random.Chance(3))) return out;
    const ByteSet next = matcher.NextBytes(state);
    std::vector<uint8_t> bytes, closing;
    for (int b = 0; b < 256; ++b) {
      if (!next.Contains(static_cast<uint8_t>(b))) continue;
      bytes.push_back(static_cast<uint8_t>(b));
      if (kClosing.find(static_cast<char>(b)) != absl::string_view::npos) {
        closing.push_back(static_cast<uint8_t>(b));
      }
    }
    if (bytes.empty()) return can_end ? std::optional<std::string>(out) : std::nullopt;
    const std::vector<uint8_t>& pool = out.size() >= soft_max && !closing.empty() ? closing : bytes;
    const uint8_t byte = random.Pick(pool);
    if (!matcher.Advance(state, byte, &state)) return std::nullopt;
    out.push_back(static_cast<char>(byte));
  }
  return std::nullopt;
}

std::string CompactJson(const json::Value& value) {
  json::SerializeOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return json::Serialize(value, options);
}

}  // namespace tandem::testing
