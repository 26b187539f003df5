// JSON Schema -> GBNF: accepted and rejected documents per feature, and compile errors.
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema.h"

namespace vks::grammar {
namespace {

struct Compiled {
  Grammar g;
  bool ok(const std::string& text) const { return matches_completely(g, text); }
};

Compiled compile(const std::string& schema) {
  const std::string gbnf = json_schema_text_to_gbnf(schema);
  try {
    return Compiled{parse_gbnf(gbnf)};
  } catch (const CompileError& e) {
    ADD_FAILURE() << e.what() << "\n" << gbnf;
    throw;
  }
}

std::string error_of(const std::string& schema) {
  try {
    parse_gbnf(json_schema_text_to_gbnf(schema));
  } catch (const CompileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << schema;
  return "";
}

TEST(JsonSchema, Primitives) {
  const auto s = compile(R"({"type":"string"})");
  EXPECT_TRUE(s.ok(R"("")"));
  EXPECT_TRUE(s.ok(R"("a\"b\\ \u00e9 \n")"));
  EXPECT_FALSE(s.ok(R"("a)"));
  EXPECT_FALSE(s.ok("\"a\nb\""));
  EXPECT_FALSE(s.ok(R"("\ud800")"));  // lone surrogate escapes are never produced
  const auto i = compile(R"({"type":"integer"})");
  EXPECT_TRUE(i.ok("0"));
  EXPECT_TRUE(i.ok("-42"));
  EXPECT_FALSE(i.ok("01"));
  EXPECT_FALSE(i.ok("1.5"));
  const auto n = compile(R"({"type":"number"})");
  EXPECT_TRUE(n.ok("-0.25e+10"));
  EXPECT_FALSE(n.ok("."));
  EXPECT_TRUE(compile(R"({"type":"boolean"})").ok("false"));
  EXPECT_TRUE(compile(R"({"type":"null"})").ok("null"));
  const auto multi = compile(R"({"type":["string","null"]})");
  EXPECT_TRUE(multi.ok("null"));
  EXPECT_TRUE(multi.ok(R"("x")"));
  EXPECT_FALSE(multi.ok("1"));
}

// Reason-first prompting depends on it: the properties come out in the order the schema declares
// them, not sorted ({"answer", "reasoning"} was what a sorted JSON map produced).
TEST(JsonSchema, PropertiesInDeclaredOrder) {
  const auto s = compile(R"({"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"},
      "confidence":{"type":"integer"}},"required":["reasoning","answer","confidence"]})");
  EXPECT_TRUE(s.ok(R"({"reasoning":"r","answer":"a","confidence":1})"));
  EXPECT_FALSE(s.ok(R"({"answer":"a","confidence":1,"reasoning":"r"})"));
  EXPECT_FALSE(s.ok(R"({"answer":"a","reasoning":"r","confidence":1})"));
}

TEST(JsonSchema, ObjectsRequiredOptionalAndNested) {
  const auto s = compile(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"object","properties":{"d":{"type":"boolean"}},"required":["d"]}},
      "required":["b"],"additionalProperties":false})");
  EXPECT_TRUE(s.ok(R"({"b": "x"})"));
  EXPECT_TRUE(s.ok(R"({"a": 1, "b": "x"})"));
  EXPECT_TRUE(s.ok(R"({"a":1,"b":"x","c":{"d":true}})"));
  EXPECT_TRUE(s.ok(R"({"b":"x","c":{"d":false}})"));
  EXPECT_FALSE(s.ok(R"({"a": 1})"));                       // b missing
  EXPECT_FALSE(s.ok(R"({"b":"x","c":{}})"));                // d missing
  EXPECT_FALSE(s.ok(R"({"b":"x","e":1})"));                 // not a property
  EXPECT_FALSE(s.ok(R"({"b":"x",})"));
  const auto all_optional = compile(R"({"properties":{"p":{"type":"null"},"q":{"type":"null"}}})");
  EXPECT_TRUE(all_optional.ok("{}"));
  EXPECT_TRUE(all_optional.ok(R"({"q": null})"));
  EXPECT_TRUE(all_optional.ok(R"({"p": null, "q": null})"));
  EXPECT_FALSE(all_optional.ok(R"({, "q": null})"));
  const auto any_object = compile(R"({"type":"object"})");
  EXPECT_TRUE(any_object.ok(R"({"x": [1, {"y": null}], "z": "w"})"));
  EXPECT_FALSE(any_object.ok("[]"));
  const auto map = compile(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(map.ok(R"({"k": 1, "l": 2})"));
  EXPECT_FALSE(map.ok(R"({"k": "v"})"));
}

TEST(JsonSchema, EnumConstAnyOfRef) {
  const auto e = compile(R"({"enum":["red", 3, null, {"a":[1]}]})");
  EXPECT_TRUE(e.ok(R"("red")"));
  EXPECT_TRUE(e.ok("3"));
  EXPECT_TRUE(e.ok(R"({"a":[1]})"));
  EXPECT_FALSE(e.ok(R"("blue")"));
  EXPECT_TRUE(compile(R"({"const":"x\"y"})").ok(R"("x\"y")"));
  const auto a = compile(R"({"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]})");
  EXPECT_TRUE(a.ok("5"));
  EXPECT_TRUE(a.ok(R"(["a", "b"])"));
  EXPECT_FALSE(a.ok("[1]"));
  const auto r = compile(R"({"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["next"]}},
                              "$ref":"#/$defs/node"})");
  EXPECT_TRUE(r.ok(R"({"next": {"next": null}})"));
  EXPECT_FALSE(r.ok(R"({"next": {}})"));
  EXPECT_TRUE(compile("{}").ok(R"([1, "x", {"a": null}])"));
  EXPECT_TRUE(compile("true").ok("false"));
}

TEST(JsonSchema, ArraysWithBounds) {
  const auto a = compile(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(a.ok("[1]"));
  EXPECT_TRUE(a.ok("[1, 2]"));
  EXPECT_TRUE(a.ok("[1,2,3]"));
  EXPECT_FALSE(a.ok("[1,2,3,4]"));
  const auto b = compile(R"({"type":"array","maxItems":0})");
  EXPECT_TRUE(b.ok("[]"));
  EXPECT_FALSE(b.ok("[1]"));
  const auto c = compile(R"({"type":"array","minItems":1})");
  EXPECT_FALSE(c.ok("[]"));
  EXPECT_TRUE(c.ok(R"([null, "x", 1])"));
}

TEST(JsonSchema, StringLengthsAndPatterns) {
  const auto l = compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(l.ok(R"("a")"));
  EXPECT_TRUE(l.ok(R"("ab")"));
  EXPECT_TRUE(l.ok(R"("\n\u00e9")"));
  EXPECT_FALSE(l.ok(R"("abcd")"));
  const auto p = compile(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}(x|yz)?$"})");
  EXPECT_TRUE(p.ok(R"("AB-123")"));
  EXPECT_TRUE(p.ok(R"("QQ-000yz")"));
  EXPECT_FALSE(p.ok(R"("ab-123")"));
  EXPECT_FALSE(p.ok(R"("AB-12")"));
  const auto q = compile(R"({"type":"string","pattern":"a\"b\\\\c[^x]."})");
  EXPECT_TRUE(q.ok(R"("a\"b\\cyz")"));
  EXPECT_FALSE(q.ok(R"("a\"b\\c"z")"));
}

TEST(JsonSchema, IntegerAndNumberRanges) {
  const auto r = compile(R"({"type":"integer","minimum":17,"maximum":243})");
  for (int v = -5; v < 300; ++v) EXPECT_EQ(r.ok(std::to_string(v)), v >= 17 && v <= 243) << v;
  const auto neg = compile(R"({"type":"integer","minimum":-120,"exclusiveMaximum":-3})");
  for (int v = -200; v < 10; ++v) EXPECT_EQ(neg.ok(std::to_string(v)), v >= -120 && v < -3) << v;
  const auto lower = compile(R"({"type":"integer","exclusiveMinimum":99})");
  EXPECT_FALSE(lower.ok("99"));
  EXPECT_TRUE(lower.ok("100"));
  EXPECT_TRUE(lower.ok("123456789"));
  EXPECT_FALSE(lower.ok("-5"));
  const auto upper = compile(R"({"type":"integer","maximum":5})");
  EXPECT_TRUE(upper.ok("-123456"));
  EXPECT_TRUE(upper.ok("5"));
  EXPECT_FALSE(upper.ok("6"));
  const auto num = compile(R"({"type":"number","minimum":0,"maximum":10})");
  EXPECT_TRUE(num.ok("9.75"));
  EXPECT_TRUE(num.ok("10"));
  EXPECT_FALSE(num.ok("10.5"));
  EXPECT_FALSE(num.ok("-1"));
  const auto frac = compile(R"({"type":"number","minimum":-2.5,"maximum":1.5})");
  EXPECT_TRUE(frac.ok("-2"));
  EXPECT_TRUE(frac.ok("1"));
  EXPECT_FALSE(frac.ok("2"));
}

TEST(JsonSchema, ErrorsNameThePathOrOffset) {
  EXPECT_NE(error_of(R"({"type":"object","properties":{"a":{"allOf":[]}}})").find("#/properties/a"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"strin"})").find("unknown type"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref":"#/nope"})").find("points nowhere"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"string","pattern":"a(b"})").find("pattern"), std::string::npos);
  try {
    json_schema_text_to_gbnf(R"({"type": "string",, })");
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(e.offset(), 18u) << e.what();
  }
  // A number literal beyond a double is JSON the parser refuses with out_of_range, not parse_error
  // (found by libFuzzer): still a CompileError, so the request gets invalid_field, not internal.
  for (const char* text : {"1e999999", R"({"type":"number","maximum":-1e400})", "7000000000000e00000409927646082434480"}) {
    try {
      json_schema_text_to_gbnf(text);
      ADD_FAILURE() << text << " compiled";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("json_schema: invalid JSON"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << text << ": " << e.what() << " is not a CompileError";
    }
  }
}

}  // namespace
}  // namespace vks::grammar
