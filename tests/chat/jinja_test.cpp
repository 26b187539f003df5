// Jinja interpreter behaviour beyond the reference chat templates: each feature the issue lists,
// jinja2's whitespace control and scoping, and errors that name the template line.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "engine/chat/jinja_budget.h"
#include "engine/chat/jinja_template.h"
#include "engine/chat/json_value.h"

namespace {

using vks::jinja::Template;
using vks::jinja::TemplateError;
using vks::jinja::Value;

std::string render(const std::string& source, const std::string& json_vars = "{}") {
  const Value vars = vks::jinja::value_from_json(nlohmann::ordered_json::parse(json_vars));
  return Template::parse(source).render(vars.as_dict());
}

// The message of the TemplateError that parsing or rendering throws ("" if none).
std::string error_of(const std::string& source, const std::string& json_vars = "{}") {
  try {
    render(source, json_vars);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

TEST(Jinja, ControlFlow) {
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}"), "1,2,3");
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}", R"({"b": 1})"), "B");
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}"), "C");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(10) if x % 3 == 0 %}{{ loop.index }}:{{ x }} {% endfor %}"), "1:0 2:3 3:6 4:9 ");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
            "02");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"), "b=1;a=2;");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.index0 }}{{ loop.revindex }}{{ x }}{% endfor %}"), "02a11b");
}

TEST(Jinja, ScopingAndNamespace) {
  // A set inside a loop does not leak out; a namespace carries state out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [5, 7] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "13");
  EXPECT_EQ(render("{% if true %}{% set y = 'in' %}{% endif %}{{ y }}"), "in");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}x{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[x2]");
}

TEST(Jinja, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
}

TEST(Jinja, FiltersAndMethods) {
  EXPECT_EQ(render("{{ '  a b  ' | trim }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|{{ [1, 2] | length }}{{ 'héé' | length }}"),
            "a b|ABab|23");
  EXPECT_EQ(render("{{ d | tojson }}", R"({"d": {"a": [1, 2.5, null, true], "s": "q\"\n é"}})"),
            "{\"a\": [1, 2.5, null, true], \"s\": \"q\\\"\\n é\"}");
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", R"({"d": {"a": [1]}})"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') | join('|') }} {{ 'a b  c'.split() | length }}"), "a|b||c 3");
  EXPECT_EQ(render("{{ 'xxhixx'.strip('x') }}{{ '\\n\\nq\\n'.lstrip('\\n') }}{{ 'ab'.startswith('a') }}{{ 'ab'.endswith('a') }}"),
            "hiq\nTrueFalse");
  EXPECT_EQ(render("{{ x | default('dflt') }}{{ '' | default('e', true) }}{{ [3, 1, 2] | sort | first }}{{ [3, 1] | last }}"),
            "dflte11");
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}",
                   R"({"msgs": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}, {"role": "user", "content": "c"}]})"),
            "a,c");
  EXPECT_EQ(render("{{ 'a-b'.replace('-', '+') }}{{ 'abc' | replace('b', '') }}{{ [1, 1, 2] | unique | list | length }}"), "a+bac2");
  EXPECT_EQ(render("{{ d.get('x', 5) }}{{ d.keys() | list | length }}{% set l = [] %}{% set _ = l.append(1) %}{{ l }}", R"({"d": {"a": 1}})"),
            "51[1]");
}

TEST(Jinja, SlicingIndexingAndConcatenation) {
  EXPECT_EQ(render("{{ 'héllo'[1:3] }}{{ 'abc'[::-1] }}{{ 'abc'[-1] }}{{ [1, 2, 3][1:] }}{{ [1, 2, 3][::-1][0] }}"), "élcbac[2, 3]3");
  EXPECT_EQ(render("{{ messages[0]['role'] }}{{ messages[0].content }}{{ messages[-1].role }}",
                   R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})"),
            "systemSuser");
  EXPECT_EQ(render("{{ 'a' + 'b' ~ 1 ~ none }}{{ [1] + [2] }}{{ 'ab' * 2 }}"), "ab1None[1, 2]abab");
}

TEST(Jinja, ArithmeticAndComparison) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }}"),
            "3 -4 1 2 3.5 1024 2.5");
  EXPECT_EQ(render("{{ 1 < 2 and 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'b' in 'abc' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 'yes' if 1 > 2 else 'no' }}{{ none or 'x' }}{{ 0 and 1 }}"), "nox0");
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"), "9.223372036854776e+18");
}

TEST(Jinja, Tests) {
  EXPECT_EQ(render("{{ x is defined }}{{ y is defined }}{{ x is none }}{{ 'a' is string }}{{ 1 is string }}{{ y is not defined }}",
                   R"({"x": null})"),
            "TrueFalseTrueTrueFalseTrue");
  EXPECT_EQ(render("{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ d is mapping }}{{ [] is iterable }}{{ false is false }}{{ 1 is number }}",
                   R"({"d": {}})"),
            "TrueTrueTrueTrueTrueTrue");
}

TEST(Jinja, WhitespaceControl) {
  // trim_blocks and lstrip_blocks, as transformers configures jinja2.
  EXPECT_EQ(render("{% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a\n  {{- 'b' -}}  \nc"), "abc");
  EXPECT_EQ(render("a {# comment #}b"), "a b");
  EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
  EXPECT_EQ(render("{{ {'a': {'b': 1}}['a']['b'] }}"), "1");
}

TEST(Jinja, Output) {
  EXPECT_EQ(render("{{ true }} {{ none }} {{ x }} {{ [1, 'a', none] }} {{ {'k': 'v'} }} {{ 1.0 }} {{ 0.1 }}"),
            "True None  [1, 'a', None] {'k': 'v'} 1.0 0.1");
}

TEST(Jinja, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("line one\n{{ x | frobnicate }}"), "template line 2: unknown filter 'frobnicate'");
  EXPECT_EQ(error_of("a\nb\n{% for x in y %}"), "template line 3: missing end tag: expected one of else, endfor");
  EXPECT_EQ(error_of("\n\n\n{{ raise_exception('roles must alternate') }}"), "template line 4: roles must alternate");
  EXPECT_EQ(error_of("{% frob %}"), "template line 1: unknown tag 'frob'");
  EXPECT_EQ(error_of("{% for m in x %}\n{% if m %}{% endfor %}"), "template line 2: unexpected 'endfor' (expected one of elif, else, endif)");
  EXPECT_EQ(error_of("{% endif %}"), "template line 1: unexpected 'endif' (no open block)");
  EXPECT_EQ(error_of("\n{{ 'unterminated }}"), "template line 2: unterminated string literal");
  EXPECT_EQ(error_of("{{ 1 +\n\n 'a' }}").rfind("template line ", 0), 0u);
  EXPECT_EQ(error_of("{{ 'a'.nosuch() }}"), "template line 1: 'nosuch' is undefined");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "template line 1: integer division by zero");
  EXPECT_EQ(error_of("{% set x.y = 1 %}", R"({"x": {}})"),
            "template line 1: cannot assign attribute 'y' on dict (only on a namespace)");
}

TEST(Jinja, LimitsStopHostileTemplates) {
  vks::jinja::RenderLimits limits;
  limits.max_steps = 10'000;
  limits.max_output_bytes = 1000;
  const Value::Dict none;
  const auto fails = [&](const std::string& source) {
    try {
      Template::parse(source).render(none, limits);
    } catch (const TemplateError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(fails("{% for i in range(100000) %}{% endfor %}").find("step limit"), std::string::npos);
  EXPECT_NE(fails("{% for i in range(2000) %}x{% endfor %}").find("size limit"), std::string::npos);
  EXPECT_NE(fails("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}").find("nested too deeply"), std::string::npos);
  EXPECT_NE(fails("{{ 'ab' * 100000000000 }}").find("size limit"), std::string::npos);
  std::string deep = "{{ ";
  for (int i = 0; i < 1000; ++i) deep += "(";
  deep += "1" + std::string(1000, ')') + " }}";
  EXPECT_NE(fails(deep).find("nested too deeply"), std::string::npos);
}

// Issue 37: bounds by element count let a template double a list 64 times or rebuild it
// quadratically and take the host's memory and minutes of CPU. Every render is bounded by the
// bytes it allocates (copies count again), by time, and stops when cancelled.
std::string render_error(const std::string& source, const vks::jinja::RenderLimits& limits) {
  try {
    Template::parse(source).render(Value::Dict{}, limits);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

TEST(Jinja, RenderIsBoundedByTheBytesItAllocates) {
  vks::jinja::RenderLimits limits;
  limits.max_alloc_bytes = uint64_t{32} << 20;
  // Doubling: 2^20 one-value elements fit the old element bound of 16 Mi but not 32 MiB of values.
  EXPECT_NE(render_error("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", limits)
                .find("memory limit (32 MiB"),
            std::string::npos);
  // Quadratic: each `ns.l + [i]` copies the list; 20,000 iterations copy 200 M values.
  EXPECT_NE(render_error("{% set ns = namespace(l=[]) %}{% for i in range(20000) %}{% set ns.l = ns.l + [i] %}{% endfor %}", limits)
                .find("memory limit"),
            std::string::npos);
  EXPECT_NE(render_error("{% set l = [1] * 8000000 %}", limits).find("memory limit"), std::string::npos);
  // Strings built by concatenation count too.
  EXPECT_NE(render_error("{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s ~ 'abcdefghij' %}{% endfor %}", limits)
                .find("memory limit"),
            std::string::npos);
  // Under the bound the same constructs work.
  EXPECT_EQ(Template::parse("{% set ns = namespace(l=[1]) %}{% for i in range(10) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}")
                .render(Value::Dict{}, limits),
            "1024");
}

TEST(Jinja, ASmallListOfAHugeValuePrintsNoHugeText) {
  vks::jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  // Strings are shared, so the list is small; printing it would be 1 GB.
  EXPECT_NE(render_error("{% set s = 'a' * 1000000 %}{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append(s) %}{% endfor %}{{ l }}", limits)
                .find("size limit"),
            std::string::npos);
  EXPECT_NE(render_error("{% set a = [1] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}{{ c | tojson }}", limits)
                .find("size limit"),
            std::string::npos);
  // Equal but not the same lists: comparing them visits 10^9 values.
  limits.max_steps = 1'000'000;
  EXPECT_NE(render_error("{% set a = [1] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}"
                         "{% set b2 = [a[:]] * 1000 %}{% set c2 = [b2] * 1000 %}{{ c == c2 }}",
                         limits)
                .find("step limit"),
            std::string::npos);
}

TEST(Jinja, RenderStopsAtItsDeadlineAndWhenCancelled) {
  vks::jinja::RenderLimits limits;
  limits.max_duration = std::chrono::milliseconds(50);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(render_error("{% for i in range(1000000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", limits)
                .find("time limit (50 ms)"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  std::atomic<bool> cancelled{true};
  limits.max_duration = std::chrono::milliseconds(60'000);
  limits.cancelled = &cancelled;
  EXPECT_NE(render_error("{% for i in range(1000000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", limits)
                .find("cancelled"),
            std::string::npos);
  cancelled = false;
  EXPECT_EQ(Template::parse("{% for i in range(3) %}{{ i }}{% endfor %}").render(Value::Dict{}, limits), "012");
}

// Found by fuzz_chat_template (`{{8*8**8*''}}` took 55 s): repeating an empty string or list looped
// once per count, allocating nothing, so neither the memory nor the size bound stopped it and the
// time bound was never checked. It is empty at once now, whatever the count.
TEST(Jinja, RepeatingNothingIsEmptyAtOnce) {
  vks::jinja::RenderLimits limits;
  limits.max_duration = std::chrono::milliseconds(60'000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Template::parse("[{{ '' * 9223372036854775807 }}]").render(Value::Dict{}, limits), "[]");
  EXPECT_EQ(Template::parse("[{{ (8 ** 18 * []) | length }}]").render(Value::Dict{}, limits), "[0]");
  EXPECT_EQ(Template::parse("[{{ 'ab' * 3 }}{{ [1] * 2 }}]").render(Value::Dict{}, limits), "[ababab[1, 1]]");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// Issue 37: a request renders several times (its own template's tool-call probes, then the
// conversation) and a model's template several probes at load; each render alone had 2 s, so they
// added up. A RenderScope bounds them together and carries the request's cancel flag, which the
// server sets when the client leaves.
TEST(Jinja, RenderScopeBoundsEveryRenderInsideItTogether) {
  const std::string slow = "{% for i in range(1000000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}";
  vks::jinja::RenderLimits generous;
  generous.max_duration = std::chrono::milliseconds(60'000);
  vks::jinja::RenderScope scope(std::chrono::milliseconds(50), nullptr);
  EXPECT_NE(render_error(slow, generous).find("time limit (50 ms)"), std::string::npos);
  // The scope's time is spent: the next render, however small, stops at its first step.
  EXPECT_NE(render_error("{% for i in range(3) %}{{ i }}{% endfor %}", generous).find("time limit (50 ms)"),
            std::string::npos);
  {
    // A nested scope cannot extend the outer deadline.
    vks::jinja::RenderScope inner(std::chrono::milliseconds(60'000), nullptr);
    EXPECT_NE(render_error("{% for i in range(3) %}{{ i }}{% endfor %}", generous).find("time limit (50 ms)"),
              std::string::npos);
  }
}

TEST(Jinja, RenderScopeCancelsEveryRenderInsideIt) {
  std::atomic<bool> cancelled{false};
  vks::jinja::RenderScope scope(std::chrono::milliseconds(60'000), &cancelled);
  EXPECT_EQ(Template::parse("{% for i in range(3) %}{{ i }}{% endfor %}").render(Value::Dict{}), "012");
  cancelled = true;
  EXPECT_NE(render_error("{% for i in range(3) %}{{ i }}{% endfor %}", {}).find("cancelled (the request is gone)"),
            std::string::npos);
  {
    vks::jinja::RenderScope inner(std::chrono::milliseconds(60'000), nullptr);  // keeps the outer flag
    EXPECT_NE(render_error("{{ 1 }}", {}).find("cancelled"), std::string::npos);
  }
}

}  // namespace
