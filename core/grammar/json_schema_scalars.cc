// Strings and numbers of the JSON Schema compiler (json_schema_compilation.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/json_number_range.h"
#include "core/grammar/json_schema_compilation.h"

namespace tandem {
namespace {

using E = GrammarExpr;

// A numeric keyword's value as an exact integer, or as a double when it has a fraction.
struct BoundValue {
  bool integral = true;
  int64_t integer = 0;
  double real = 0;
};

absl::StatusOr<std::optional<BoundValue>> ReadBound(const json::Object& schema,
                                                    absl::string_view keyword,
                                                    const std::string& pointer) {
  const json::Value* v = schema.Find(keyword);
  if (v == nullptr) return std::nullopt;
  if (v->is_bool()) {
    return SchemaError(keyword, pointer,
                       "the draft 4 boolean form is not supported; use a number");
  }
  if (!v->is_number()) return SchemaError(keyword, pointer, "must be a number");
  BoundValue bound;
  if (v->is_int()) {
    bound.integer = v->as_int();
    bound.real = static_cast<double>(bound.integer);
    if (bound.integer > kMaxExactBound || bound.integer < -kMaxExactBound) {
      return SchemaError(keyword, pointer, "a bound past +-2^53 is not supported");
    }
    return bound;
  }
  bound.real = v->as_double();
  if (!(std::fabs(bound.real) <= static_cast<double>(kMaxExactBound))) {
    return SchemaError(keyword, pointer, "a bound past +-2^53 is not supported");
  }
  bound.integral = std::trunc(bound.real) == bound.real;
  bound.integer = static_cast<int64_t>(std::trunc(bound.real));
  return bound;
}

}  // namespace

absl::StatusOr<std::optional<int32_t>> JsonSchemaCompilation::ReadCount(
    const json::Object& schema, absl::string_view keyword, const std::string& pointer) const {
  const json::Value* v = schema.Find(keyword);
  if (v == nullptr) return std::nullopt;
  const bool integral =
      v->is_int() || (v->is_double() && std::trunc(v->as_double()) == v->as_double());
  if (!integral || v->as_double() < 0) {
    return SchemaError(keyword, pointer, "must be a non-negative integer");
  }
  if (v->as_double() > limits_.max_repeat) {
    return SchemaError(keyword, pointer,
                       absl::StrCat(json::Serialize(*v), " is past max_repeat=", limits_.max_repeat));
  }
  return static_cast<int32_t>(v->as_double());
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::StringExpr(const json::Object& schema,
                                                              const std::string& pointer) {
  ASSIGN_OR_RETURN(std::optional<int32_t> min_length, ReadCount(schema, "minLength", pointer));
  ASSIGN_OR_RETURN(std::optional<int32_t> max_length, ReadCount(schema, "maxLength", pointer));
  for (absl::string_view keyword : {"pattern", "format"}) {
    const json::Value* v = schema.Find(keyword);
    if (v == nullptr) continue;
    if (!v->is_string()) return SchemaError(keyword, pointer, "must be a string");
    for (absl::string_view other : {"minLength", "maxLength", "format"}) {
      if (other != keyword && schema.Contains(other)) {
        return SchemaError(keyword, pointer,
                           absl::StrCat("beside '", other, "' is not supported"));
      }
    }
    GrammarExpr content;
    if (keyword == "pattern") {
      ASSIGN_OR_RETURN(content, PatternExpr(v->as_string(), pointer));
    } else if (!rules_.Format(v->as_string(), &content)) {
      return SchemaError(keyword, pointer,
                         absl::StrCat(json::Serialize(*v),
                                      " is not supported (date, time, date-time, uuid, email)"));
    }
    return E::Sequence({E::Literal("\""), std::move(content), E::Literal("\"")});
  }
  if (!min_length && !max_length) return rules_.String();
  if (min_length && max_length && *min_length > *max_length) {
    return SchemaError("minLength", pointer,
                       absl::StrCat(*min_length, " is greater than maxLength ", *max_length));
  }
  return E::Sequence({E::Literal("\""),
                      E::Repeat(rules_.StringChar(), min_length.value_or(0),
                                max_length.value_or(kUnbounded)),
                      E::Literal("\"")});
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::NumberExpr(const json::Object& schema,
                                                              const std::string& pointer,
                                                              bool integer_only) {
  ASSIGN_OR_RETURN(std::optional<BoundValue> minimum, ReadBound(schema, "minimum", pointer));
  ASSIGN_OR_RETURN(std::optional<BoundValue> maximum, ReadBound(schema, "maximum", pointer));
  ASSIGN_OR_RETURN(std::optional<BoundValue> ex_minimum,
                   ReadBound(schema, "exclusiveMinimum", pointer));
  ASSIGN_OR_RETURN(std::optional<BoundValue> ex_maximum,
                   ReadBound(schema, "exclusiveMaximum", pointer));
  if (!minimum && !maximum && !ex_minimum && !ex_maximum) {
    return integer_only ? rules_.Integer() : rules_.Number();
  }
  if (integer_only) {
    // The integers within the bounds; a fractional bound rounds inward.
    std::optional<int64_t> lo, hi;
    auto raise = [&lo](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    auto lower = [&hi](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    if (minimum) raise(static_cast<int64_t>(std::ceil(minimum->real)));
    if (ex_minimum) raise(static_cast<int64_t>(std::floor(ex_minimum->real)) + 1);
    if (maximum) lower(static_cast<int64_t>(std::floor(maximum->real)));
    if (ex_maximum) lower(static_cast<int64_t>(std::ceil(ex_maximum->real)) - 1);
    if (lo && hi && *lo > *hi) {
      return SchemaError(minimum ? "minimum" : "exclusiveMinimum", pointer,
                         "no integer lies within the bounds");
    }
    return IntegerRangeExpr(lo, hi);
  }
  for (const auto& [keyword, bound] :
       {std::pair{"minimum", minimum}, std::pair{"maximum", maximum},
        std::pair{"exclusiveMinimum", ex_minimum}, std::pair{"exclusiveMaximum", ex_maximum}}) {
    if (bound && !bound->integral) {
      return SchemaError(keyword, pointer,
                         "a bound that is not an integer is supported on integers only");
    }
  }
  for (const auto& [keyword, bound] :
       {std::pair{"exclusiveMinimum", ex_minimum}, std::pair{"exclusiveMaximum", ex_maximum}}) {
    if (bound && (bound->integer >= kMaxExclusiveNumberBound ||
                  bound->integer <= -kMaxExclusiveNumberBound)) {
      return SchemaError(keyword, pointer,
                         "an exclusive bound past +-2^31 is supported on integers only");
    }
  }
  // The tightest bound on each side; at equal values the exclusive one.
  std::optional<NumberBound> lo, hi;
  if (minimum) lo = NumberBound{minimum->integer, false};
  if (ex_minimum && (!lo || ex_minimum->integer >= lo->value)) {
    lo = NumberBound{ex_minimum->integer, true};
  }
  if (maximum) hi = NumberBound{maximum->integer, false};
  if (ex_maximum && (!hi || ex_maximum->integer <= hi->value)) {
    hi = NumberBound{ex_maximum->integer, true};
  }
  if (lo && hi &&
      (lo->value > hi->value || (lo->value == hi->value && (lo->exclusive || hi->exclusive)))) {
    return SchemaError(lo->exclusive ? "exclusiveMinimum" : "minimum", pointer,
                       "no number lies within the bounds");
  }
  return NumberRangeExpr(lo, hi);
}

}  // namespace tandem
