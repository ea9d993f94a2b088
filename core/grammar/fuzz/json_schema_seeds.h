// Seeds for json_schema_fuzzer: schemas over every keyword the compiler supports and the
// refusals it must give, some with "\n#--instance--\n" and a text to match. Used by the seeder
// (make_json_schema_seeds) and the replay test; random schemas (random_schema_test_util.h)
// are added by both.
#ifndef TANDEM_CORE_GRAMMAR_FUZZ_JSON_SCHEMA_SEEDS_H_
#define TANDEM_CORE_GRAMMAR_FUZZ_JSON_SCHEMA_SEEDS_H_

namespace tandem::fuzzing {

inline constexpr const char* kJsonSchemaSeeds[] = {
    R"({"type": "string"})" "\n#--instance--\n" R"("a\u00e9\ud83d\ude00")",
    R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": -5,
        "exclusiveMaximum": 100}, "b": {"type": "string", "maxLength": 3}}, "required": ["b"],
        "additionalProperties": false})" "\n#--instance--\n" R"({"a":7,"b":"xy"})",
    R"({"properties": {"a": {}, "ab": {}, "b": false}})" "\n#--instance--\n" R"({"abc":1})",
    R"({"type": "array", "prefixItems": [{"const": 1}, {"enum": ["x", null]}],
        "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "minItems": 1,
        "maxItems": 5})" "\n#--instance--\n" "[1,null,0.5]",
    R"({"$defs": {"n": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/n"},
        {"type": "null"}]}}, "required": ["next"]}}, "$ref": "#/$defs/n"})",
    R"({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
        {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]}]})",
    R"({"type": ["string", "null"], "format": "date-time"})",
    R"({"type": "string", "format": "email"})" "\n#--instance--\n" R"("a@b.co")",
    R"({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$"})",
    R"({"allOf": [{"$ref": "#/definitions/u"}], "definitions": {"u": {"format": "uuid"}}})",
    R"({"$ref": "#"})",
    R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})",
    R"({"type": "array", "items": {"$ref": "#"}})" "\n#--instance--\n" "[[],[[]]]",
    R"({"not": {}, "if": true})",
    R"({"type": "integer", "minimum": 1e300})",
    R"({"type": "string", "minLength": 100000})",
    R"({"enum": [1, 1.5, "x", [true], {"a": null}]})",
    R"(true)",
    R"({"type": "object", "properties": {"\u0000\"\\": {"type": "boolean"}}})",
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_GRAMMAR_FUZZ_JSON_SCHEMA_SEEDS_H_
