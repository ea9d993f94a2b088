#include "core/grammar/json_schema_compiler.h"

#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/random_schema_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tandem::testing::StatusIs;

struct AcceptCase {
  const char* schema;
  std::vector<const char*> accepted;
  std::vector<const char*> rejected;
};

void ExpectLanguage(const AcceptCase& c, const JsonSchemaOptions& options = {}) {
  SCOPED_TRACE(c.schema);
  absl::StatusOr<Grammar> grammar = CompileJsonSchema(c.schema, options);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  for (const char* text : c.accepted) EXPECT_TRUE(GrammarMatches(*grammar, text)) << text;
  for (const char* text : c.rejected) EXPECT_FALSE(GrammarMatches(*grammar, text)) << text;
}

TEST(JsonSchemaCompilerTest, ScalarsFollowJsonSyntaxExactly) {
  const AcceptCase cases[] = {
      {R"({"type": "string"})",
       {R"("")", R"("abc")", R"("a\"b")", R"("\\\/\b\f\n\r\t")", R"("\u00e9\u00E9")",
        R"("\ud83d\ude00")", "\"\xC3\xA9\xF0\x9F\x98\x80\""},
       {"abc", R"("\x")", R"("\ud83d")", R"("\ude00")", "\"a\nb\"", R"("\u12")", R"("a)",
        R"("a"")"}},
      {R"({"type": "integer"})", {"0", "-1", "123", "-0"}, {"01", "1.0", "1e3", "+1", "", "-"}},
      {R"({"type": "number"})",
       {"0", "-0.5", "1e10", "1.5E-3", "10", "2e+5", "1e99", "0.0000000000000000000001"},
       {"01", ".5", "1.", "1e", "-", "0x1", "NaN", "1e100", "1e-100",
        // 65 digits: past kMaxIntegerDigits (numbers stay finite as doubles)
        "10000000000000000000000000000000000000000000000000000000000000000"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null"}},
      {R"({"type": "null"})", {"null"}, {"nul", "\"null\""}},
      {R"({"type": ["string", "integer"]})", {R"("a")", "7"}, {"1.5", "null"}},
      {R"({"enum": ["a", 1, null, {"x": [1, 2]}], "description": "d"})",
       {R"("a")", "1", "null", R"({"x":[1,2]})"},
       {R"("b")", "2", R"({"x": [1, 2]})"}},
      {R"({"const": "fixed"})", {R"("fixed")"}, {R"("other")"}},
      {R"({"type": "integer", "enum": [1, "a", 2.5, 3]})", {"1", "3"}, {R"("a")", "2.5"}},
      {"true", {"1", R"({"a":[null,true]})", R"("s")"}, {"", "{"}},
      {"{}", {"[]", "-2.5e3"}, {"[,]"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, ObjectsKeepDeclaredOrderAndRequiredMembers) {
  const AcceptCase cases[] = {
      {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
           "c": {"type": "boolean"}}, "required": ["b"], "additionalProperties": false})",
       {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":true})", R"({"b":"x","c":false})"},
       {"{}", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x","d":1})", R"({"b":"x",})",
        R"({"a":1,"c":true})"}},
      {R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
           "additionalProperties": false})",
       {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
       {R"({"b":2,"a":1})", R"({,"b":2})", R"({"a":1,})"}},
      // additionalProperties absent: allowed, after the declared members, never a declared key.
      {R"({"properties": {"a": {"type": "integer"}}})",
       {"{}", R"({"a":1})", R"({"a":1,"zz":[true]})", R"({"x":"y"})", R"({"ab":1})", R"({"":2})",
        R"({"a\n":1})", R"({"x":1,"y":2})"},
       {R"({"a":"s"})", R"({"a":1,"a":2})", R"({"x":1,"a":1})", R"({"\u0061":1})", "[]"}},
      {R"({"type": "object", "additionalProperties": {"type": "integer"}})",
       {"{}", R"({"k":1,"j":2})"},
       {R"({"k":"s"})"}},
      {R"({"type": "object", "properties": {"a": false, "b": true}})",
       {R"({"b":[1]})", R"({"c":1})"},
       {R"({"a":1})"}},
      // A required name that properties does not declare follows the declared members.
      {R"({"type": "object", "properties": {"a": {"const": 1}}, "required": ["z", "a"]})",
       {R"({"a":1,"z":null})"},
       {R"({"z":null,"a":1})", R"({"a":1})"}},
      {R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"],
           "additionalProperties": false})",
       {R"({"c":1})", R"({"a":1,"c":1})", R"({"b":1,"c":1})", R"({"a":1,"b":2,"c":3})"},
       {R"({"a":1,"b":2})", "{}"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, ArraysCountItemsAndPrefixes) {
  const AcceptCase cases[] = {
      {R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
       {"[1]", "[1,2,3]"},
       {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"}},
      {R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
       {"[]", R"(["a"])", R"(["a",1])"},
       {"[1]", R"(["a",1,2])"}},
      {R"({"prefixItems": [{"const": "x"}], "items": {"type": "boolean"}, "minItems": 3})",
       {R"(["x",true,false])", R"(["x",true,false,true])"},
       {R"(["x",true])", "[]"}},
      {R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"}},
      {R"({"type": "array"})", {"[]", R"([1,"a",[null]])"}, {"[", "[1,,2]"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, CombinatorsAndReferences) {
  const AcceptCase cases[] = {
      {R"({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null})",
       {R"("a")", "null"},
       {"1"}},
      {R"({"oneOf": [{"type": "string"}, {"type": "integer"}]})", {R"("a")", "1"}, {"true"}},
      {R"({"oneOf": [
           {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
            "required": ["kind", "x"], "additionalProperties": false},
           {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"],
            "additionalProperties": false}]})",
       {R"({"kind":"a","x":1})", R"({"kind":"b"})"},
       {R"({"kind":"b","x":1})", R"({"kind":"c"})"}},
      {R"({"allOf": [{"$ref": "#/definitions/s"}], "definitions": {"s": {"type": "string"}}})",
       {R"("a")"},
       {"1"}},
      {R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
           "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
           "required": ["v", "next"], "additionalProperties": false}},
          "$ref": "#/$defs/node"})",
       {R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":null}})"},
       {R"({"v":1})", R"({"v":1,"next":{"v":2}})"}},
      {R"({"type": "array", "items": {"$ref": "#"}})", {"[]", "[[]]", "[[],[[]]]"}, {"[1]"}},
      {R"({"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"})", {"1"}, {R"("a")"}},
      {R"({"$defs": {"x": {"type": "integer"}}, "$ref": "#/%24defs/x"})", {"1"}, {R"("a")"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, FormatsAreStrict) {
  const AcceptCase cases[] = {
      {R"({"type": "string", "format": "date"})",
       {R"("2024-02-29")", R"("2000-02-29")", R"("2023-12-31")", R"("2023-04-30")",
        R"("0000-02-29")"},
       {R"("2023-02-29")", R"("1900-02-29")", R"("2023-13-01")", R"("2023-04-31")",
        R"("2023-00-10")", R"("2023-01-00")", R"("2023-1-01")", R"("2023-01-32")"}},
      {R"({"type": "string", "format": "time"})",
       {R"("23:59:59Z")", R"("00:00:00.123+05:30")", R"("12:00:00-23:59")"},
       {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")", R"("12:00:60Z")",
        R"("12:00:00+24:00")", R"("12:00:00z")"}},
      {R"({"type": "string", "format": "date-time"})",
       {R"("2024-01-01T10:00:00Z")", R"("2024-02-29T23:59:59.5+01:00")"},
       {R"("2024-01-01 10:00:00Z")", R"("2024-01-01T10:00Z")"}},
      {R"({"type": "string", "format": "uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")"},
       {R"("123E4567-E89B-12D3-A456-426614174000")", R"("123e4567e89b12d3a456426614174000")"}},
      {R"({"type": "string", "format": "email"})",
       {R"("a.b+c@example.com")", R"("x@a-b.co")"},
       {R"("a@b")", R"("a..b@x.com")", R"("@x.com")", R"("a@-x.com")", R"("a@x-.com")"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, LengthsCountCodePoints) {
  ExpectLanguage({R"({"type": "string", "minLength": 2, "maxLength": 3})",
                  {R"("ab")", R"("a\nb")", "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\"",
                   R"("\ud83d\ude00x")"},
                  {R"("a")", R"("abcd")", R"("\n")"}});
}

TEST(JsonSchemaCompilerTest, NumberBoundsAreExact) {
  const AcceptCase cases[] = {
      {R"({"type": "integer", "minimum": -5, "exclusiveMaximum": 100})",
       {"-5", "0", "99", "-1", "10"},
       {"-6", "100", "1000", "-10", "-0"}},
      {R"({"type": "integer", "minimum": 1.5, "maximum": 3.5})", {"2", "3"}, {"1", "4"}},
      {R"({"type": "integer", "exclusiveMinimum": 9007199254740990})",
       {"9007199254740991", "123456789012345678901"},
       {"9007199254740990", "1"}},
      {R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})",
       {"0.5", "1", "0.001", "0.10", "0.000001", "0.999999"},
       {"0", "-0.5", "1.5", "1e-3", "0.0", "0.000", "-0", "0.0000001", "0.9999999"}},
      {R"({"type": "number", "minimum": -2, "exclusiveMaximum": 0})",
       {"-2", "-1.5", "-0.01", "-1"},
       {"0", "-2.5", "0.5", "-0.0"}},
      {R"({"type": ["integer", "number"], "maximum": 10})", {"10", "9.5", "-1", "-3"},
       {"10.5", "11"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, PatternMatchesAnywhereUnlessAnchoredAndIsJsonEncoded) {
  const AcceptCase cases[] = {
      {R"({"type": "string", "pattern": "^[a-z]+\\d$"})", {R"("abc1")"}, {R"("Abc1")", R"("abc")"}},
      {R"({"type": "string", "pattern": "b"})", {R"("abc")", R"("b")"}, {R"("ac")"}},
      {R"({"type": "string", "pattern": "^\"\\\\\n$"})", {R"("\"\\\n")"}, {"\"\"\\\n\""}},
      {R"({"type": "string", "pattern": "^[^a]$"})", {R"("b")", R"("\"")", R"("\t")"}, {R"("a")"}},
  };
  for (const AcceptCase& c : cases) ExpectLanguage(c);
}

TEST(JsonSchemaCompilerTest, WhitespaceIsBoundedOrAbsent) {
  JsonSchemaOptions options;
  options.max_whitespace = 2;
  ExpectLanguage({R"({"type": "object", "properties": {"a": {"type": "array"}}})",
                  {R"({ "a" : [ 1 , 2 ] })", "{\n\"a\":[]\n}", "{  }", R"({"a":[]})"},
                  {R"( {"a":[]})", R"({"a":   []})", R"({"a":[]} )"}},
                 options);
  ExpectLanguage({R"({"type": "object"})", {"{}"}, {"{ }"}});
}

TEST(JsonSchemaCompilerTest, AdditionalPropertiesDefaultCanBeClosed) {
  JsonSchemaOptions options;
  options.additional_properties_by_default = false;
  ExpectLanguage({R"({"properties": {"a": {"type": "integer"}}})", {"{}", R"({"a":1})"},
                  {R"({"b":1})"}},
                 options);
}

TEST(JsonSchemaCompilerTest, JsonObjectGrammarAcceptsAnyObject) {
  ASSERT_OK_AND_ASSIGN(Grammar grammar, JsonObjectGrammar());
  for (const char* text : {"{}", R"({"a":[1,{"b":null}],"a":2})", R"({"\u00e9":"x"})"}) {
    EXPECT_TRUE(GrammarMatches(grammar, text)) << text;
  }
  for (const char* text : {"[]", R"("x")", "{", R"({"a"})", R"({a:1})"}) {
    EXPECT_FALSE(GrammarMatches(grammar, text)) << text;
  }
}

TEST(JsonSchemaCompilerTest, AddJsonSchemaRuleEmbedsASchemaInALargerGrammar) {
  ASSERT_OK_AND_ASSIGN(json::Value schema,
                       json::Parse(R"({"type": "object", "properties": {"city": {"type":
                           "string"}}, "required": ["city"], "additionalProperties": false})"));
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  ASSERT_OK_AND_ASSIGN(const int32_t arguments, AddJsonSchemaRule(schema, builder));
  ASSERT_OK(builder.DefineRule(root, GrammarExpr::Sequence({GrammarExpr::Literal("call "),
                                                            GrammarExpr::Rule(arguments)})));
  ASSERT_OK_AND_ASSIGN(Grammar grammar, std::move(builder).Build(root));
  EXPECT_TRUE(GrammarMatches(grammar, R"(call {"city":"Paris"})"));
  EXPECT_FALSE(GrammarMatches(grammar, R"({"city":"Paris"})"));
}

struct ErrorCase {
  const char* schema;
  std::vector<const char*> message_parts;
};

TEST(JsonSchemaCompilerTest, RefusesWhatItDoesNotSupportNamingKeywordAndPointer) {
  const std::string deep = [] {
    std::string s;
    for (int i = 0; i < 100; ++i) s += R"({"type": "array", "items": )";
    s += "{}";
    for (int i = 0; i < 100; ++i) s += "}";
    return s;
  }();
  const ErrorCase cases[] = {
      {R"({"not": {}})", {"'not' at #:", "not supported"}},
      {R"({"properties": {"a": {"if": {}}}})", {"'if' at #/properties/a:"}},
      {R"({"type": "array", "uniqueItems": true})", {"'uniqueItems' at #"}},
      {R"({"patternProperties": {}})", {"'patternProperties' at #"}},
      {R"({"type": "number", "multipleOf": 2})", {"'multipleOf' at #"}},
      {R"({"allOf": [{}, {}]})", {"'allOf' at #:", "more than one"}},
      {R"({"type": "object", "anyOf": [{}]})", {"'type' at #:", "beside 'anyOf'"}},
      {R"({"$ref": "#"})", {"'$ref' at #:", "cycle # -> #"}},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
          "$ref": "#/$defs/a"})",
       {"'$ref' at #:", "#/$defs/a -> #/$defs/b -> #/$defs/a"}},
      {R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})", {"left recursion", "'#'"}},
      {R"({"$ref": "http://example.com/s.json"})", {"'$ref' at #:", "not a pointer"}},
      {R"({"properties": {"p": {"$ref": "#/$defs/missing"}}})",
       {"'$ref' at #/properties/p:", "does not resolve"}},
      {R"({"type": "string", "minLength": 100000})", {"'minLength' at #:", "max_repeat=10000"}},
      {R"({"type": "string", "maxLength": -1})", {"'maxLength' at #:", "non-negative integer"}},
      {R"({"type": "frob"})", {"'type' at #:", "unknown type \"frob\""}},
      {R"({"enum": []})", {"'enum' at #:", "no value"}},
      {R"({"type": "integer", "enum": ["a"]})", {"'enum' at #:", "no value"}},
      {R"({"enum": [1], "minimum": 0})", {"'minimum' at #:", "beside 'enum'"}},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", {"'minItems' at #:"}},
      {R"({"prefixItems": [{}], "items": false, "minItems": 2})", {"'minItems' at #:"}},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", {"'minLength' at #:"}},
      {R"({"type": "number", "minimum": 0.5})", {"'minimum' at #:", "not an integer"}},
      {R"({"type": "integer", "minimum": 1e300})", {"'minimum' at #:", "2^53"}},
      {R"({"type": "number", "exclusiveMinimum": true})", {"'exclusiveMinimum' at #:", "draft 4"}},
      {R"({"type": "number", "exclusiveMaximum": 2147483648})",
       {"'exclusiveMaximum' at #:", "past +-2^31"}},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", {"'minimum' at #:", "no integer"}},
      {R"({"type": "number", "exclusiveMinimum": 1, "maximum": 1})",
       {"'exclusiveMinimum' at #:", "no number"}},
      {R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})",
       {"'oneOf' at #:", "branches 0 and 1 may both match"}},
      {R"({"oneOf": [{"type": "object"}, {"properties": {"a": {"const": 1}}}]})",
       {"'oneOf' at #:"}},
      {R"({"type": "string", "format": "uri"})", {"'format' at #:", "\"uri\" is not supported"}},
      {R"({"type": "string", "format": "date", "maxLength": 20})",
       {"'format' at #:", "beside 'maxLength'"}},
      {R"({"type": "string", "pattern": "a", "minLength": 1})",
       {"'pattern' at #:", "beside 'minLength'"}},
      {R"j({"type": "string", "pattern": "(?=a)"})j", {"'pattern' at #:"}},
      {R"({"required": ["a"], "additionalProperties": false})",
       {"'required' at #:", "\"a\" is not in properties"}},
      {R"({"properties": {"a": false}, "required": ["a"]})", {"'required' at #:", "is false"}},
      {R"({"items": [{}]})", {"'items' at #:", "prefixItems"}},
      {R"({"properties": {"a": {"$id": "x"}}})", {"'$id' at #/properties/a:"}},
      {R"({"properties": {"a/b": {"type": "string", "minLength": "1"}}})",
       {"'minLength' at #/properties/a~1b:"}},
      {R"({"anyOf": [false]})", {"'anyOf' at #:", "every branch is false"}},
      {"false", {"'false' at #:"}},
      {"1", {"'schema' at #:", "not integer"}},
      {R"({"type": []})", {"'type' at #:"}},
      {"not json", {"not a JSON document"}},
      {deep.c_str(), {"max_depth=64"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.schema);
    absl::StatusOr<Grammar> grammar = CompileJsonSchema(c.schema);
    ASSERT_FALSE(grammar.ok());
    EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
    for (const char* part : c.message_parts) {
      EXPECT_THAT(std::string(grammar.status().message()), HasSubstr(part));
    }
  }
}

TEST(JsonSchemaCompilerTest, RefusesADocumentPastItsSizeLimit) {
  JsonSchemaOptions options;
  options.max_schema_bytes = 10;
  EXPECT_THAT(CompileJsonSchema(R"({"type": "string"})", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("18 bytes"), HasSubstr("max_schema_bytes=10"))));
  options = {};
  options.max_whitespace = 65;
  EXPECT_THAT(CompileJsonSchema("{}", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_whitespace")));
}

TEST(JsonSchemaCompilerTest, RefusesTooManyEntries) {
  std::string schema = R"({"enum": [)";
  for (int i = 0; i < 1025; ++i) schema += (i ? "," : "") + std::to_string(i);
  schema += "]}";
  EXPECT_THAT(CompileJsonSchema(schema),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'enum' at #"), HasSubstr("max_keyword_entries=1024"))));
}

// Random schemas over every supported keyword compile, and the grammar accepts the random
// valid instances drawn from each (serialized compactly).
TEST(JsonSchemaCompilerTest, RandomSchemasCompileAndAcceptTheirInstances) {
  int compiled = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const json::Value schema = testing::RandomSchema(seed);
    const std::string text = json::Serialize(schema);
    SCOPED_TRACE(text);
    absl::StatusOr<Grammar> grammar = CompileJsonSchema(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    ++compiled;
    for (uint32_t i = 0; i < 5; ++i) {
      const std::string instance = testing::CompactJson(testing::RandomInstance(schema, seed * 31 + i));
      EXPECT_TRUE(GrammarMatches(*grammar, instance)) << instance;
    }
  }
  EXPECT_EQ(compiled, 300);
}

}  // namespace
}  // namespace tandem
