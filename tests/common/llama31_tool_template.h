#pragma once
// A Llama-3.1-like chat template for tool-call tests: a call is JSON right after the assistant
// header, with "parameters", and the template refuses several calls in one turn (unlike the
// <tool_call> tags of the fixture daemons' served templates).
namespace vks::test {

inline constexpr const char* kLlama31LikeTemplate =
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
    "{% if m.tool_calls %}{% if m.tool_calls | length != 1 %}{{ raise_exception('one call only') }}{% endif %}"
    "{% set c = m.tool_calls[0].function %}{{ '{\"name\": \"' + c.name + '\", \"parameters\": ' + (c.arguments | tojson) + '}' }}"
    "{% else %}{{ m.content }}{% endif %}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

}  // namespace vks::test
